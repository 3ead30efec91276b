"""`release --conformance`: step 6 runs the matrix against the signed manifest.

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
from pipeline.release.steps import Conformed, ManifestSigned
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json
from verify.formats.conformance import ConformanceReport
from verify.formats.manifest import ModuleManifest


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
        for tier in report.tiers():
            rows = [r for r in report.rows if (r.engine, r.tier) == (engine, tier)]
            failing = [f"{r.lane}{_isolation(r.isolated)}" for r in rows if r.outcome == "fail"]
            if failing:
                problems.append(f"{engine} ({tier} tier): failing {', '.join(failing)}")
            elif not any(r.outcome == "pass" for r in rows):
                problems.append(f"{engine} ({tier} tier): no passing row")
    return problems


def run_conformance(
    opts: Options, require: Sequence[str] = ()
) -> Callable[[ManifestSigned], Conformed]:
    """Step 6: the matrix over the signed manifest's lanes; its report rides on `Conformed`."""

    def conformance_step(signed: ManifestSigned) -> Conformed:
        say = signed.checked.request.say
        manifest = signed.documents.manifest
        with tempfile.TemporaryDirectory(prefix="tinyrustlm-conformance-bundle-") as tmp:
            subject = from_bundle(stage(Path(tmp), signed.files, manifest))
            run_opts = replace(
                opts,
                trust=trust_of(signed.checked.key, manifest),
                say=lambda line: say(f"    {line}"),
            )
            report = conformance(subject, run_opts)
        problems = unmet(report, require)
        if problems:
            raise ConformanceFailed(
                f"conformance: {'; '.join(problems)}",
                where="conformance matrix",
                hint="fix the lane, or switch it off with the manifest's disabled_lanes",
            )
        failed = sum(r.outcome == "fail" for r in report.rows)
        summary = f"{len(report.rows)} rows on {len(report.engines())} engines, {failed} failing"
        return Conformed(signed, report_bytes(report), summary)

    return conformance_step
