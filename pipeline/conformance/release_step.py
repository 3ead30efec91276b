"""`release --conformance`: the matrix runs at the end of step 4 (smoke), before signing.

It runs on the very files the bundle will hold, so `conformance.json` can be signed with the
rest: listed in SHA256SUMS and a subject of the provenance. The JS engines run every lane
through js/loader.js, which verifies a signed manifest, so this step assembles the manifest
and signs it with the release key first (the manifest does not list conformance.json, and
Ed25519 is deterministic: step 5 signs the same bytes into the same signature, and checks
that it did — `Tested.conformance_manifest_signature`). The bundle is staged in a temporary
folder; the loader trusts exactly the signing key. Failing rows are recorded in the report;
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

from pipeline.assemble import assemble
from pipeline.conformance.cli import conformance, report_bytes
from pipeline.conformance.matrix import Options, Trust
from pipeline.conformance.subject import from_bundle
from pipeline.errors import CheckFailed
from pipeline.keys import SigningKey, resolve_signing_key
from pipeline.release import Tested, Verified, read_material
from pipeline.sign import sign_to_sigstore_bundle
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json
from verify.formats.conformance import ConformanceReport
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE, ModuleManifest


def signing_key(tested: Tested) -> SigningKey:
    """The key step 5 will sign with (same resolution, same key)."""
    request = tested.verified.built.checked.request
    return resolve_signing_key(
        request.repo_root, request.key_path, dict(request.env), request.key_class
    )


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
    """Why each required engine fails: a failing row, or no passing row."""
    problems = []
    for engine in engines:
        rows = [r for r in report.rows if r.engine == engine]
        failing = [f"{r.lane}{_isolation(r.isolated)}" for r in rows if r.outcome == "fail"]
        if failing:
            problems.append(f"{engine}: failing {', '.join(failing)}")
        elif not any(r.outcome == "pass" for r in rows):
            problems.append(f"{engine}: no passing row")
    return problems


def with_conformance(
    smoke: Callable[[Verified], Tested], opts: Options, require: Sequence[str] = ()
) -> Callable[[Verified], Tested]:
    """Step 4 followed by the matrix over the tested lanes; its report rides on `Tested`."""

    def smoke_then_conformance(verified: Verified) -> Tested:
        tested = smoke(verified)
        say = verified.built.checked.request.say
        say("    conformance matrix (manifest signed for the loader) ...")
        key = signing_key(tested)
        documents = assemble(read_material(tested), key.key_class)  # no conformance.json yet
        manifest = documents.files[MANIFEST]
        signature = sign_to_sigstore_bundle(key.private_key, MANIFEST_PAYLOAD_TYPE, manifest)
        files = {**documents.files, MANIFEST_SIGNATURE: signature}
        with tempfile.TemporaryDirectory(prefix="tinyrustlm-conformance-bundle-") as tmp:
            subject = from_bundle(stage(Path(tmp), files, documents.manifest))
            run_opts = replace(
                opts,
                trust=trust_of(key, documents.manifest),
                say=lambda line: say(f"    {line}"),
            )
            report = conformance(subject, run_opts)
        problems = unmet(report, require)
        if problems:
            raise CheckFailed(
                f"conformance: {'; '.join(problems)}",
                where="conformance matrix",
                hint="fix the lane, or switch it off with the manifest's disabled_lanes",
            )
        failed = sum(r.outcome == "fail" for r in report.rows)
        summary = f"{len(report.rows)} rows on {len(report.engines())} engines, {failed} failing"
        return replace(
            tested,
            detail=f"{tested.detail}; conformance: {summary}",
            conformance=report_bytes(report),
            conformance_manifest_signature=signature,
        )

    return smoke_then_conformance
