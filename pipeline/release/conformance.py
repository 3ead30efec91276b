"""Step 6 of every release: the conformance matrix against the signed manifest.

Every release runs it on `RELEASE_ENGINES` (node: every wasm lane through js/loader.js, and
the native oracle) over every lane and model tier, and signs the report; `release
--conformance` runs every engine (the browsers, wasmtime, qemu, wine); `--no-conformance`
ships no report (trials). A release with no native lane this machine runs has no oracle: the
default step then says so and ships no report, where `--conformance` refuses.

It runs on the very files the bundle will hold, so `conformance.json` can be signed with the
rest: listed in SHA256SUMS and a subject of the provenance (step 7). The JS engines run every
lane through js/loader.js, which verifies the signed manifest step 5 made (the manifest does
not list conformance.json, so it is final). The bundle is staged in a temporary folder; the
loader trusts exactly the signing key. Failing rows are recorded in the report;
`--conformance-require ENGINES` makes the release stop when one of those engines has a
failing row or no passing one.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from pipeline.conformance.cli import conformance, report_bytes
from pipeline.conformance.matrix import Options, Trust
from pipeline.conformance.subject import from_bundle
from pipeline.documents.keys import SigningKey
from pipeline.errors import CheckFailed
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json
from verify.formats.conformance import MODEL_TIERS, AnyReport, ConformanceReport
from verify.formats.manifest import ModuleManifest

# The engines every release's matrix runs: those every release machine has (the pinned node);
# the browsers are opt-in (`--conformance`) where they are not installed.
RELEASE_ENGINES = ("node",)


class ConformanceFailed(CheckFailed):
    """The release's conformance matrix found a failing row."""

    error_id = "release.conformance-failed"
    default_hint = "fix the lane, or switch it off with the manifest's disabled_lanes"


def stage(folder: Path, files: Mapping[str, bytes], manifest: ModuleManifest) -> Path:
    """The bundle's files under `folder`, native binaries executable (the oracle runs one)."""
    native = {a.url for a in manifest.native_artifacts}
    for url, data in files.items():
        path = folder / url
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if url in native:
            path.chmod(0o755)
    return folder


def trust_of(key: SigningKey, manifest: ModuleManifest) -> Trust:
    """Trusted keys holding only the signing key, valid until the manifest expires."""
    not_after = datetime.fromtimestamp(manifest.expires_epoch, UTC)
    entry = trusted_key_entry(key.private_key.public_key(), key.key_class, not_after)
    return Trust(json.loads(trusted_keys_json([entry])), key.key_class == "development")


def _isolation(isolated: bool | None) -> str:
    return "" if isolated is None else (" isolated" if isolated else " not isolated")


def unmet(report: ConformanceReport, engines: Sequence[str]) -> list[str]:
    """Why each required engine fails, per model tier: a failing row, or no passing row."""
    problems = []
    for engine in engines:
        for tier in MODEL_TIERS:  # every tier the release declares
            rows = [r for r in report.rows if (r.engine, r.tier) == (engine, tier)]
            failing = [f"{r.lane}{_isolation(r.isolated)}" for r in rows if r.outcome == "fail"]
            if failing:
                problems.append(f"{engine} ({tier} tier): failing {', '.join(failing)}")
            elif not any(r.outcome == "pass" for r in rows):
                problems.append(f"{engine} ({tier} tier): no passing row")
    return problems


def covered(report: AnyReport) -> str:
    """Which engines and tiers a report covers, for the release's output."""
    failed = sum(r.outcome == "fail" for r in report.rows)
    return (
        f"{len(report.rows)} rows, engines {', '.join(report.engines())}, tiers "
        f"{'/'.join(report.tiers())}, {report.cases.count} cases, {failed} failing"
    )


def matrix_report(
    files: Mapping[str, bytes],
    manifest: ModuleManifest,
    key: SigningKey,
    say: Callable[[str], None],
    opts: Options,
    require: Sequence[str] = (),
) -> bytes:
    """The matrix over the signed bundle's lanes (`files`, staged in a temporary folder, the
    loader trusting only `key`): the report's bytes, or `ConformanceFailed` when a required
    engine fails (`unmet`)."""
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-conformance-bundle-") as tmp:
        subject = from_bundle(stage(Path(tmp), files, manifest))
        run_opts = replace(opts, trust=trust_of(key, manifest), say=lambda line: say(f"    {line}"))
        report = conformance(subject, run_opts)
    problems = unmet(report, require)
    if problems:
        raise ConformanceFailed(
            f"conformance: {'; '.join(problems)}",
            where="conformance matrix",
            hint="fix the lane, or switch it off with the manifest's disabled_lanes",
        )
    return report_bytes(report)
