"""The commands end to end, in-process through `tinyrustlm-release`'s real entry point."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from pipeline.cli import main
from tests.harness.release import fake_report
from tests.harness.tuf import NEW, OLD, Bundles, Mirror, entries
from verify.bundle import verifier


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue(), err.getvalue()


def test_init_publish_fetch_and_a_refused_rollback(
    mirror: Mirror, bundles: Bundles, tmp_path: Path
) -> None:
    shutil.rmtree(mirror.root)
    repo = ["--repo", str(mirror.root), "--keys", str(tmp_path / "keys")]
    code, out, _ = _run("repo", "init", *repo, "--expiry", "timestamp=0.25")
    assert code == 0 and "DEVELOPMENT keys" in out
    trust = ["--trusted-keys", str(bundles.trusted_keys)]
    assert _run("publish", str(bundles.paths[OLD]), *repo, *trust)[0] == 0
    old_timestamp = mirror.file("metadata/timestamp.json")
    code, out, _ = _run("publish", str(bundles.paths[NEW]), *repo, *trust)
    assert code == 0 and f"published  tinyrustlm {NEW}" in out
    assert _run("repo", "refresh-timestamp", *repo)[0] == 0
    assert _run("repo", "rotate-root", *repo)[0] == 0

    fetch = [
        "fetch",
        mirror.url,
        "--root",
        str(mirror.root / "metadata" / "1.root.json"),
        *trust,
        "--state",
        str(tmp_path / "state"),
    ]
    code, out, _ = _run(*fetch, "--latest", "--out", str(tmp_path / "a"))
    assert code == 0, out
    assert f"verified   tinyrustlm {NEW}" in out
    assert (tmp_path / "a" / f"tinyrustlm-{NEW}" / "manifest.json").is_file()

    mirror.attacks["/metadata/timestamp.json"] = old_timestamp
    code, out, err = _run(*fetch, "--latest", "--out", str(tmp_path / "b"))
    assert code == 1
    assert err.startswith("error[fetch.rollback]: ")
    assert entries(tmp_path / "b") == []

    code, _, err = _run("publish", str(bundles.paths[OLD]), *repo, *trust)
    assert code == 1 and err.startswith("error[publish.version-not-newer]: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["fetch", "http://127.0.0.1:9", "--root", "r", "--out", "o", "--trusted-keys", "t"],
        [
            "fetch",
            "u",
            "--root",
            "r",
            "--latest",
            "--version",
            "1",
            "--out",
            "o",
            "--trusted-keys",
            "t",
        ],
        ["repo", "init", "--repo", "r"],
        ["publish", "b", "--repo", "r", "--keys", "k"],
    ],
    ids=[
        "fetch-no-version-choice",
        "fetch-both-version-choices",
        "init-no-keys",
        "publish-no-trust",
    ],
)
def test_bad_usage_exits_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info, contextlib.redirect_stderr(io.StringIO()):
        main(argv)
    assert info.value.code == 2


def test_publish_into_a_missing_repository_names_it(bundles: Bundles, tmp_path: Path) -> None:
    code, _, err = _run(
        "publish",
        str(bundles.paths[NEW]),
        "--repo",
        str(tmp_path / "nowhere"),
        "--keys",
        str(tmp_path / "keys"),
        "--trusted-keys",
        str(bundles.trusted_keys),
    )
    assert code == 3
    assert err.startswith("error[repo.missing]: ") and "nowhere" in err
