"""`fetch`'s HTTP: bounded retries with exponential backoff, and a download that breaks off
resumed where it stopped (HTTP Range), under python-tuf's Updater (issue 36).

urllib3 alone retried a refused connection a few times at once and never a body that broke off
mid-way. Here every request is tried at most `RetryPolicy.attempts` times; before attempt n+1 it
waits `min(first_wait * 2**(n-1), max_wait)` seconds. Retried: a connection that fails or times
out, a body that breaks off, HTTP 408, 429 and 5xx. Never retried: any other HTTP status (a 404
is how TUF learns there is no newer root), and a range answer that is not the one asked for.

A body that broke off after K bytes is asked for again from byte K (`Range: bytes=K-`): a 206
must say `Content-Range: bytes K-…`; a 200 (a server without ranges) is read from its start and
its first K bytes dropped. Nothing here trusts a byte: python-tuf still bounds the length and
checks the SHA-256 of the whole file, every byte of it, as before.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import urllib3
from tuf.api import exceptions
from tuf.ngclient.fetcher import FetcherInterface
from tuf.ngclient.urllib3_fetcher import Urllib3Fetcher

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_CONTENT_RANGE = re.compile(r"bytes ([0-9]+)-([0-9]+)/([0-9]+|\*)")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # per request, the first included
    first_wait: float = 0.5  # seconds before the second attempt
    max_wait: float = 8.0  # no wait is longer
    socket_timeout: int = 30  # connect, and the longest gap between bytes

    def wait(self, failed: int) -> float:
        """Seconds to wait after the `failed`-th failed attempt (1-based)."""
        return float(min(self.first_wait * 2 ** (failed - 1), self.max_wait))


DEFAULT_POLICY = RetryPolicy()


class _Retry(Exception):
    """One attempt failed in a way worth another; `cause` is what to raise if none is left."""

    def __init__(self, cause: exceptions.DownloadError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class RetryingFetcher(FetcherInterface):
    def __init__(
        self,
        policy: RetryPolicy = DEFAULT_POLICY,
        app_user_agent: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        chunk_size: int = 400_000,
    ) -> None:
        self.policy = policy
        self._sleep = sleep
        self._plain = Urllib3Fetcher(policy.socket_timeout, chunk_size, app_user_agent)
        self.chunk_size = chunk_size
        self.retries = 0  # attempts after a failure, over this fetcher's life

    def _fetch(self, url: str) -> Iterator[bytes]:
        # The first answer is awaited here, so an HTTP error is raised by fetch() itself.
        failures = [0]  # one budget per download: `attempts` in all, breaks included
        response = self._attempts(url, 0, failures)
        return self._body(url, response, failures)

    def _failed(self, failures: list[int], cause: exceptions.DownloadError) -> None:
        """Counts a failure: raises `cause` when no attempt is left, else waits."""
        failures[0] += 1
        if failures[0] >= self.policy.attempts:
            raise cause
        self.retries += 1
        self._sleep(self.policy.wait(failures[0]))

    def _attempts(self, url: str, start: int, failures: list[int]) -> urllib3.BaseHTTPResponse:
        """The answer to GET url (from byte `start`), while the download's budget lasts."""
        while True:
            try:
                return self._open(url, start)
            except _Retry as retry:
                self._failed(failures, retry.cause)

    def _open(self, url: str, start: int) -> urllib3.BaseHTTPResponse:
        headers = {"Range": f"bytes={start}-"} if start else {}
        try:
            response = self._plain._proxy_env.request(
                "GET",
                url,
                headers={**self._plain._proxy_env._kw_args.get("headers", {}), **headers},
                preload_content=False,
                timeout=urllib3.Timeout(self.policy.socket_timeout),
                retries=False,  # the retries are ours, with their waits
            )
        except urllib3.exceptions.TimeoutError as exc:
            raise _Retry(exceptions.SlowRetrievalError(f"{url}: {exc}")) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise _Retry(exceptions.DownloadError(f"{url}: {exc}")) from exc
        if response.status >= 400:
            response.drain_conn()
            response.release_conn()
            error = exceptions.DownloadHTTPError(
                f"HTTP error occurred with status {response.status}", response.status
            )
            if response.status in RETRY_STATUSES:
                raise _Retry(error)
            raise error
        if start and response.status == 206:
            found = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
            if found is None or int(found.group(1)) != start:
                response.release_conn()
                raise exceptions.DownloadError(
                    f"{url}: asked for bytes {start}- and got "
                    f"{response.headers.get('Content-Range')!r}"
                )
        return response

    def _body(
        self, url: str, response: urllib3.BaseHTTPResponse, failures: list[int]
    ) -> Iterator[bytes]:
        """Every byte of the body once, resuming after a break (each break is one failure)."""
        received = 0
        while True:
            skip = received if response.status == 200 else 0  # a server that ignored Range
            try:
                for chunk in response.stream(self.chunk_size):
                    if skip:
                        dropped = min(skip, len(chunk))
                        chunk, skip = chunk[dropped:], skip - dropped
                    if chunk:
                        received += len(chunk)
                        yield chunk
                return
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                cause: exceptions.DownloadError = (
                    exceptions.SlowRetrievalError(f"{url}: {exc}")
                    if isinstance(exc, urllib3.exceptions.TimeoutError)
                    else exceptions.DownloadError(f"{url}: broke off after {received} bytes")
                )
                cause.__cause__ = exc
            finally:
                response.release_conn()
            self._failed(failures, cause)
            response = self._attempts(url, received, failures)
