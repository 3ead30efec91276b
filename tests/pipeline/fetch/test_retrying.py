"""fetch's HTTP retries with backoff and resumes by range (issue 36), against a real local
server that fails the first N requests (5xx, or a body that breaks off half-way); bounded
(a server that always fails is given up after `attempts`), never retrying a 404, and every byte
still checked by python-tuf's length and hash checks."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest
from tuf.api import exceptions

from pipeline.fetch.retrying import RetryingFetcher, RetryPolicy
from tests.harness.flaky_http import BODY, Script, flaky_server

POLICY = RetryPolicy(attempts=4, first_wait=0.5, max_wait=1.5, socket_timeout=5)


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    with flaky_server() as served:
        yield served


def _fetcher() -> tuple[RetryingFetcher, list[float]]:
    waits: list[float] = []
    return RetryingFetcher(POLICY, sleep=waits.append, chunk_size=64 << 10), waits


@pytest.mark.parametrize("failures", [0, 1, 3], ids=["no failure", "one 503", "three 503s"])
def test_a_server_that_fails_n_times_is_retried_with_growing_waits(
    server: tuple[str, Script], failures: int
) -> None:
    url, script = server
    script.mode, script.failures = "503", failures
    fetcher, waits = _fetcher()
    assert fetcher.download_bytes(url, len(BODY)) == BODY
    assert len(script.seen) == failures + 1
    assert waits == [0.5, 1.0, 1.5][:failures]  # doubling, capped at max_wait


def test_a_server_that_always_fails_is_given_up_after_the_bound(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.mode, script.failures = "503", 1000
    fetcher, waits = _fetcher()
    with pytest.raises(exceptions.DownloadHTTPError) as caught:
        fetcher.download_bytes(url, len(BODY))
    assert caught.value.status_code == 503
    assert len(script.seen) == POLICY.attempts
    assert waits == [0.5, 1.0, 1.5]


def test_a_404_is_not_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode = "404"
    fetcher, waits = _fetcher()
    with pytest.raises(exceptions.DownloadHTTPError):
        fetcher.download_bytes(url, len(BODY))
    assert (len(script.seen), waits) == (1, [])


@pytest.mark.parametrize("failures", [1, 2], ids=["one break", "two breaks"])
def test_a_body_that_breaks_off_is_resumed_by_range(
    server: tuple[str, Script], failures: int
) -> None:
    url, script = server
    script.mode, script.failures = "break", failures
    fetcher, waits = _fetcher()
    got = fetcher.download_bytes(url, len(BODY))
    assert hashlib.sha256(got).digest() == hashlib.sha256(BODY).digest()
    assert script.seen[0] is None
    assert all(r is not None and r.startswith("bytes=") for r in script.seen[1:]), script.seen
    assert len(script.seen) == failures + 1 and len(waits) == failures


def test_a_server_without_ranges_is_read_again_from_its_start(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.mode, script.failures = "no-range", 1
    fetcher, _ = _fetcher()
    assert fetcher.download_bytes(url, len(BODY)) == BODY


def test_a_range_answer_that_is_not_the_one_asked_is_refused(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.mode, script.failures = "bad-range", 1
    fetcher, _ = _fetcher()
    with pytest.raises(exceptions.DownloadError, match="asked for bytes"):
        fetcher.download_bytes(url, len(BODY))


def test_a_body_that_always_breaks_off_is_given_up(server: tuple[str, Script]) -> None:
    url, script = server
    script.mode, script.failures = "break", 1000
    fetcher, waits = _fetcher()
    with pytest.raises(exceptions.DownloadError):
        fetcher.download_bytes(url, len(BODY))
    assert len(script.seen) == POLICY.attempts  # one budget per download, breaks included
    assert all(w <= POLICY.max_wait for w in waits)
