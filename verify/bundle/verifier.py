"""Verify a release bundle without trusting the machine that built it.

    BundleVerifier(trust_root).verify(bundle, Requirements(now=..., ...)) -> Verdict

The steps below are numbered as in README.md ("Verifying a release"); each either passes
or raises its own `BundleRejected` subclass (see `errors.py`) and later steps do not run.
A step is a function of what earlier steps established, each a frozen value: the `Opened`
bundle (step 1, `opened.py`), who `Signed` it (steps 2-4, `signature_check.py`), the
verified `ModuleManifest` (steps 5-7, `manifest_check.py`); steps 8-10 are in
`document_check.py`, 11 `checksum_check.py`, 12 `report_check.py`, 13
`conformance_check.py`, 14 `rebuilds.py`, 15 `page_check.py`. The verifier is what you
trust (trust root, the report's re-inspection, read limits); `Requirements` is what you ask
of this bundle.

 1. Read the bundle: a directory, or a tarball unpacked into a temporary folder. Only
    regular files; every read is bounded (entries, bytes per file, per JSON file, in total,
    compressed; `tarball.HARD_LIMITS`) and refused at the first byte over. A tarball's gzip
    header must be the release writer's, its CRC-32 and ISIZE must match, nothing may follow.
 2. Signatures: manifest.sigstore.json and provenance.sigstore.json each hold a DSSE
    envelope signed by at least the trust policy's threshold of DISTINCT keys allowed to sign
    that document (`trusted_keys.check_envelope`): each counted key listed in the
    trusted-keys file, within [not_before, not_after), not revoked, not `development` unless
    --allow-dev-key; every signature by a listed key verifies over PAE(payloadType, payload)
    as received; one key never signs an envelope twice. Below the threshold the refusal
    names how many of how many. A v1 file is threshold 1 of its keys, and both documents by
    the same key unless it says `"signers": "any-trusted-key"`.
 2b. Keyless (when --certificate-identity/--certificate-oidc-issuer or the trust policy's
    `keyless` asks for it): manifest.keyless.sigstore.json is a Sigstore bundle over
    manifest.json's bytes by that identity and issuer, verified offline with sigstore-python
    against its embedded trusted root (`keyless.py`). Without such a requirement the file
    may be present and is not judged (no identity to judge it by).
 3. Key hints: each bundle's verificationMaterial.publicKey.hint is one of its signatures'
    keyids (the key that made the release; co-signers add signatures, not hints).
 4. Payload types: the manifest's is `MANIFEST_PAYLOAD_TYPE` (verify.formats.manifest), the
    provenance's `IN_TOTO_PAYLOAD_TYPE` (verify.formats.in_toto).
 5. Manifest: the signed payload (decoded, never re-serialised) is canonical JSON and a
    valid tinyrustlm.module-manifest.v1; manifest.json is byte-identical to it; its
    key_class matches the role of every counted manifest signer; it has not expired; its
    version is not below --not-before-version.
 6. Manifest digests: every file it lists exists with the listed SHA-256 and size; the
    build id recomputes (`verify.formats.manifest.build_id`, the pipeline's function too).
 7. Files: nothing missing, nothing extra.
 8. Provenance: an in-toto Statement v1 with a SLSA Provenance v1 predicate
    (`verify.formats.provenance.ProvenanceClaims`) whose subjects
    are exactly the artifacts, JS files, manifest.json, sbom.cdx.json and
    verification-report.json with their SHA-256, for the manifest's source revision.
 9. SBOM: CycloneDX 1.6 whose `file` components (`verify.formats.cyclonedx`) are exactly the
    listed files and hashes.
10. Builder paths: no string in any signed document (the signed manifest and provenance
    statement, and every JSON file the provenance signs: the SBOM, the report, the
    conformance report, js/package.json, ...) holds an absolute path outside the
    machine-independent ones, a `file:` URL or a loopback URL (`verify.placeholders`): the
    builder's locations are named `$WORKSPACE/...` or `$CARGO_HOME/...`.
11. Checksums: SHA256SUMS lists exactly the bundle's files with their SHA-256, and the
    tarball (the input, or the one in the directory) is byte for byte the tarball the
    release writer makes of the verified files (`tarball.deterministic_tarball`).
12. Report: verification-report.json is a valid tinyrustlm.verification-report.v1 (read
    strictly by its model); every artifact re-inspected with this verifier's own policy gives
    the findings it records, lane by lane, and all of them pass.
13. Conformance: conformance.json, when present (required with --require-engines), is about
    this release's artifacts, and each required engine has a passing row and no failing one.
    memory-plan.json, when present, is a valid tinyrustlm.memory-plan.v1 whose plans add up,
    about this release's wasm artifacts, every one of them (`memory_plan_check.py`).
14. Rebuilds (only with --require-rebuilds K): at least K rebuild attestations by distinct
    keys of the rebuilders file, none of them a release key, reproduced every signed file
    (or, with --rebuild-scope artifacts, every artifact) of this bundle (`rebuilds.py`).
15. Page: report.html is, byte for byte, the page `verify.bundle.page` renders from the documents
    steps 1-14 verified (`page_check.py`); the previous release it carries for its diff is
    an earlier release whose documents belong together.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from verify.bundle.checksum_check import check_checksums
from verify.bundle.conformance_check import check_conformance
from verify.bundle.document_check import check_builder_paths, check_provenance, check_sbom
from verify.bundle.file_digests import sha256_hex
from verify.bundle.keyless import KeylessIdentity, required_identity
from verify.bundle.layout import CONFORMANCE, MANIFEST, MEMORY_PLAN, PROVENANCE_SIGNATURE
from verify.bundle.manifest_check import (
    check_file_set,
    check_listed_digests,
    check_manifest,
    manifest_detail,
)
from verify.bundle.memory_plan_check import check_memory_plan
from verify.bundle.opened import open_bundle
from verify.bundle.page_check import check_page
from verify.bundle.rebuilds import RebuildPolicy, RebuildTarget, Subjects, check_rebuilds
from verify.bundle.report_check import Deriver, check_report, default_deriver
from verify.bundle.signature_check import (
    check_hints,
    check_keyless,
    check_payload_types,
    check_signatures,
)
from verify.bundle.step_titles import STEP_TITLES
from verify.bundle.tarball import HARD_LIMITS, ReadLimits
from verify.bundle.trusted_keys import TrustRoot
from verify.bundle.versions import version_key


@dataclass(frozen=True)
class StepResult:
    number: int
    title: str
    detail: str


@dataclass(frozen=True)
class Verdict:
    """What a passing verification established."""

    version: str
    build_id: str
    keyid: str
    key_class: str
    files: int
    steps: tuple[StepResult, ...]
    keyids: tuple[str, ...] = ()  # every counted manifest signer (keyid is the first)
    roles: tuple[str, ...] = ()  # their roles, in the same order
    # the verified bundle's files (path -> bytes), for what is made from them (report.html)
    contents: Mapping[str, bytes] = field(default_factory=dict, repr=False, compare=False)


Progress = Callable[[StepResult], None]


@dataclass(frozen=True)
class Requirements:
    """What the caller asks of this bundle, beyond the trust root's own rules."""

    now: int  # Unix time at which expiry and key validity are judged
    allow_dev_key: bool = False  # accept a development-role signing key
    version_floor: str | None = None  # refuse a manifest version below it (release_version.py)
    require_engines: tuple[str, ...] = ()  # each needs a passing conformance row (step 13)
    rebuilds: RebuildPolicy | None = None  # step 14's K-of-N rebuild policy (None: none)
    # a Sigstore identity that must also have signed manifest.json, narrowing the trust
    # root's (a different one than the root's is a `KeylessIdentityConflict`)
    keyless: KeylessIdentity | None = None

    def __post_init__(self) -> None:
        if self.version_floor is not None and version_key(self.version_floor) is None:
            raise ValueError(f"version floor {self.version_floor!r} is not a release version")


@dataclass(frozen=True)
class BundleVerifier:
    """A verifier holding what it trusts: the trust root (keys and signing policy; bare keys
    become one with `trusted_keys.trust_root_from_keys`), how step 12 re-inspects artifacts
    (None: this verifier's own inspectors) and the read limits of step 1."""

    trust: TrustRoot
    derive: Deriver | None = None
    limits: ReadLimits = HARD_LIMITS

    def verify(
        self, bundle: Path, requires: Requirements, progress: Progress | None = None
    ) -> Verdict:
        """Run steps 1-15; raises the first failing step's `BundleRejected` subclass."""
        results: list[StepResult] = []

        def done(number: int, detail: str) -> None:
            result = StepResult(number, STEP_TITLES[number - 1], detail)
            results.append(result)
            if progress is not None:
                progress(result)

        trust, now = self.trust, requires.now
        with open_bundle(bundle, self.limits) as opened:
            files = opened.files
            done(1, opened.detail)
            signed = check_signatures(files, trust, requires.allow_dev_key, now)
            keyless = required_identity(trust.keyless, requires.keyless)
            done(2, signed.detail + check_keyless(files, keyless))
            done(3, check_hints(signed))
            done(4, check_payload_types(signed))
            manifest = check_manifest(signed, files, now, requires.version_floor)
            done(5, manifest_detail(manifest))
            done(6, check_listed_digests(files, manifest))
            done(7, check_file_set(opened, manifest))
            done(8, check_provenance(signed, files, manifest))
            done(9, check_sbom(files, manifest))
            done(10, check_builder_paths(signed, files, manifest))
            done(11, check_checksums(opened, manifest))
            done(12, check_report(opened, manifest, self.derive or default_deriver()))
            manifest_sha256 = sha256_hex(files[MANIFEST])
            engines = requires.require_engines
            conformance = check_conformance(
                files.get(CONFORMANCE), manifest, manifest_sha256, engines
            )
            done(13, f"{conformance}; {check_memory_plan(files.get(MEMORY_PLAN), manifest)}")
            subjects = Subjects.of(manifest, files[MANIFEST], signed.payload(PROVENANCE_SIGNATURE))
            target = RebuildTarget(manifest, subjects, now, frozenset(trust.keys))
            done(14, check_rebuilds(requires.rebuilds, target))
            done(15, check_page(files))
        signers = signed.manifest_signers
        return Verdict(
            manifest.version,
            manifest.build_id,
            signers[0].keyid,
            signers[0].role,
            len(files),
            tuple(results),
            tuple(k.keyid for k in signers),
            tuple(k.role for k in signers),
            files,
        )

    def verify_files(
        self, files: Mapping[str, bytes], name: str, requires: Requirements
    ) -> Verdict:
        """`verify` of a bundle held in memory (bundle path -> bytes, e.g. what a co-signer or
        a publisher is about to sign), written first to a private folder named `name`."""
        with tempfile.TemporaryDirectory(prefix="tinyrustlm-verify-") as tmp:
            folder = Path(tmp) / name
            for rel, data in files.items():
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_bytes(data)
            return self.verify(folder, requires)
