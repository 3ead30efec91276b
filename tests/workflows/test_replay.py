"""release.yml replayed here (tests/workflows/replay.py) makes the very bundle that
`./nox -s release` makes from the same commit and key. Six lane builds, each in its own
clean clone, then the reference release in another: integration, and slow.

Byte for byte, with one measured exception: conformance.json holds the loader's receipts,
and a receipt records when it was made (`created_utc`) and the URLs the loader fetched (the
test server's port), so two runs of the matrix differ in it, and with it the files that name
its digest (the provenance statement, SHA256SUMS, the tarball). The test proves that this is
the only difference: the reports are equal but for those receipt fields (and the receipts'
digests), and each of those files is equal once the reference's conformance digest is
replaced by the replay's."""

from __future__ import annotations

import base64
import filecmp
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pipeline.documents.keys import generate_key_files
from tests.clones import clone_head
from verify.bundle.layout import CHECKSUMS, CONFORMANCE, PROVENANCE_SIGNATURE, parse_checksums
from verify.bundle.tarball import read_tarball

from .replay import Replay

pytestmark = [pytest.mark.integration, pytest.mark.replay]
REPO = Path(__file__).resolve().parents[2]
RELEASE_ARGS = ["--conformance", "--conformance-require", "chromium,firefox,webkit"]


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _verdicts(report: bytes) -> dict[str, Any]:
    """The report without what differs between two honest runs: each receipt's creation time
    and fetched URLs (the server's port), hence its digest."""
    doc: dict[str, Any] = json.loads(report)
    for row in doc["rows"]:
        row.pop("receipt_sha256", None)
        receipt = row.get("receipt") or {}
        receipt.pop("created_utc", None)
        for fetched in receipt.get("fetched", []):
            fetched.pop("url", None)
    return doc


def _statement(envelope: bytes) -> dict[str, Any]:
    payload = json.loads(envelope)["dsseEnvelope"]["payload"]
    statement: dict[str, Any] = json.loads(base64.b64decode(payload))
    return statement


def assert_same_but_the_measurement(replayed: Path, reference: Path) -> list[str]:
    """Every file equal, or (conformance.json differing) equal but for its digest; returns
    the names that differed in bytes."""
    assert _tree(replayed) == _tree(reference)
    _, mismatch, errors = filecmp.cmpfiles(replayed, reference, _tree(reference), shallow=False)
    assert errors == []
    if CONFORMANCE not in mismatch:
        assert mismatch == []
        return mismatch
    (tarball,) = [name for name in _tree(reference) if name.endswith(".tar.gz")]
    measured = {CONFORMANCE, PROVENANCE_SIGNATURE, CHECKSUMS}
    assert sorted(mismatch) == sorted([*measured, tarball])
    ours, theirs = ((folder / CONFORMANCE).read_bytes() for folder in (replayed, reference))
    assert _verdicts(ours) == _verdicts(theirs)
    old, new = hashlib.sha256(theirs).hexdigest(), hashlib.sha256(ours).hexdigest()
    # the provenance statement: equal once it names the replay's conformance digest
    statement = json.dumps(_statement((reference / PROVENANCE_SIGNATURE).read_bytes()))
    assert old in statement
    assert json.loads(statement.replace(old, new)) == _statement(
        (replayed / PROVENANCE_SIGNATURE).read_bytes()
    )

    # SHA256SUMS (read with verify's own parser): equal on every line but the measured
    # report's and those naming it
    def sums(folder: Path) -> dict[str, str]:
        listed = parse_checksums((folder / CHECKSUMS).read_bytes())
        assert listed is not None
        kept = {name: digest for name, digest in listed.items() if name not in {*measured, tarball}}
        assert len(kept) >= len(listed) - 3
        return kept

    assert sums(replayed) == sums(reference)
    # the tarball: the same members, equal but for the measured report and what names it
    ours_tar, theirs_tar = (
        read_tarball((f / tarball).read_bytes(), tarball)[1] for f in (replayed, reference)
    )
    assert sorted(ours_tar) == sorted(theirs_tar)
    assert {n for n in ours_tar if ours_tar[n] != theirs_tar[n]} <= measured
    return mismatch


def test_the_replayed_release_is_the_nox_release(tmp_path: Path) -> None:
    keys = generate_key_files(tmp_path / "keys", "replay", "release")
    pem = keys.private_pem.read_text(encoding="utf-8")
    replay = Replay(
        REPO / ".github" / "workflows" / "release.yml",
        tmp_path / "replay",
        secrets={"TINYRUSTLM_RELEASE_KEY_PEM": pem},
    )
    results: dict[str, set[str]] = {}
    for r in replay.run():
        results.setdefault(r.name.split(" ")[0], set()).add(r.status)
    assert results == {
        "plan": {"passed"},
        "build": {"passed"},
        "smoke": {"passed"},  # under qemu and wine here: no arm64 or Windows hardware
        "assemble": {"passed"},
        "github-release": {"skipped"},  # tags only; needs GitHub
        "publish": {"skipped"},
        "pages": {"skipped"},
    }
    built = [r.name for r in replay.results if r.name.startswith("build ")]
    assert len(built) == 6
    (replayed,) = (tmp_path / "replay" / "artifacts" / "bundle").glob("tinyrustlm-*")

    clone = clone_head(tmp_path / "reference")  # the very commit the replay ran
    subprocess.run(
        ["git", "-C", str(clone), "checkout", "-q", "--detach", replay.commit], check=True
    )
    home = tmp_path / "reference-home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}  # the machine's (certificates, pip), its own HOME
    subprocess.run(
        ["./nox", "-s", "release", "--", "--key", str(keys.private_pem), *RELEASE_ARGS],
        cwd=clone,
        env=env,
        check=True,
    )
    (reference,) = (clone / "dist").glob("tinyrustlm-*")
    differed = assert_same_but_the_measurement(replayed, reference)
    print(f"replay: {len(_tree(reference))} files, byte-identical but {differed}")
