"""Verify a release bundle without trusting the machine that built it.

The steps below are numbered as in README.md ("Verifying a release"); each either passes
or raises its own `BundleRejected` subclass (see `errors.py`) and later steps do not run.

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
 4. Payload types: the manifest's is application/vnd.tinyrustlm.module-manifest.v1+json,
    the provenance's is application/vnd.in-toto+json.
 5. Manifest: the signed payload (decoded, never re-serialised) is canonical JSON and a
    valid tinyrustlm.module-manifest.v1; manifest.json is byte-identical to it; its
    key_class matches the role of every counted manifest signer; it has not expired; its
    version is not below --not-before-version.
 6. Manifest digests: every file it lists exists with the listed SHA-256 and size; the
    build id recomputes (`verify.formats.manifest.build_id`, the pipeline's function too).
 7. Files: nothing missing, nothing extra.
 8. Provenance: an in-toto Statement v1 with a SLSA Provenance v1 predicate whose subjects
    are exactly the artifacts, JS files, manifest.json, sbom.cdx.json and
    verification-report.json with their SHA-256, for the manifest's source revision.
 9. SBOM: CycloneDX 1.6 whose `file` components are exactly the listed files and hashes.
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
14. Rebuilds (only with --require-rebuilds K): at least K rebuild attestations by distinct
    keys of the rebuilders file, none of them a release key, reproduced every signed file
    (or, with --rebuild-scope artifacts, every artifact) of this bundle (`rebuilds.py`).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterator, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verify.bundle import errors as e
from verify.bundle.conformance_check import check_conformance
from verify.bundle.dsse import (
    IN_TOTO_PAYLOAD_TYPE,
    SigstoreBundle,
)
from verify.bundle.keyless import KEYLESS_SIGNATURE, KeylessIdentity, verify_keyless
from verify.bundle.layout import (
    ATTESTED_FIXED_FILES,
    CHECKSUMS,
    CONFORMANCE,
    FIXED_FILES,
    MANIFEST,
    MANIFEST_SIGNATURE,
    OPTIONAL_ATTESTED_FILES,
    PROVENANCE_SIGNATURE,
    PROVENANCE_STATEMENT,
    REPORT,
    SBOM,
    bundle_name,
    parse_checksums,
    tarball_name,
)
from verify.bundle.rebuilds import RebuildPolicy, Subjects, count_rebuilds, independent
from verify.bundle.report_check import Deriver, default_deriver, findings_by_lane, read_report
from verify.bundle.tarball import (
    HARD_LIMITS,
    ReadLimits,
    deterministic_tarball,
    explain_difference,
    member_limit,
    read_tarball,
)
from verify.bundle.trusted_keys import (
    TrustedKey,
    TrustRoot,
    check_envelope,
    trust_root_from_keys,
)
from verify.bundle.versions import version_key
from verify.canonical import MalformedJson, canonical_json, parse_json
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE, ModuleManifest, build_id
from verify.formats.trusted_keys import SignedDocument
from verify.inputs import InputError, InputTooLarge, kind_of, read_regular_file
from verify.placeholders import absolute_paths_outside

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
SLSA_PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
# signature bundle -> the payloadType it must carry
SIGNED_FILES = {
    MANIFEST_SIGNATURE: MANIFEST_PAYLOAD_TYPE,
    PROVENANCE_SIGNATURE: IN_TOTO_PAYLOAD_TYPE,
}
# signature bundle -> the document whose signing rule it meets
SIGNED_DOCUMENT: dict[str, SignedDocument] = {
    MANIFEST_SIGNATURE: "manifest",
    PROVENANCE_SIGNATURE: "provenance",
}

STEP_TITLES = (
    "read the bundle",
    "signatures by a trusted key",
    "key hints match signing keys",
    "payload types",
    "signed manifest",
    "manifest digests vs files",
    "no missing or extra files",
    "provenance subjects == files",
    "SBOM hashes == files",
    "no builder paths in signed documents",
    "SHA256SUMS and tarball",
    "report re-derived with the verifier's policy",
    "conformance matrix",
    "independent rebuilds (K of N)",
)


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


Progress = Callable[[StepResult], None]


@dataclass
class _State:
    root: Path
    files: dict[str, bytes]
    is_directory: bool
    top_folder: str = ""  # the tarball's single top folder (tarball input only)
    tarball: bytes = b""  # the input tarball's own bytes (tarball input only)
    source: str = ""  # the input tarball's path, as given (tarball input only)
    signed: dict[str, SigstoreBundle] = field(default_factory=dict)
    signers: dict[str, tuple[TrustedKey, ...]] = field(default_factory=dict)
    manifest: ModuleManifest | None = None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- step 1 -------------------------------------------------------------------------------
def _read_bounded(path: Path, rel: str, limit: int) -> bytes:
    try:
        return read_regular_file(path, "bundle", limit)
    except InputTooLarge as exc:
        raise e.LimitExceeded(exc.message, where=rel) from None
    except InputError as exc:
        raise e.BundleUnreadable(exc.message, where=exc.where) from None


def _read_tree(root: Path, limits: ReadLimits) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = entries = 0
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        entries += 1
        if entries > limits.entries:
            raise e.LimitExceeded(f"more than {limits.entries} entries", where=rel)
        if path.is_symlink():
            raise e.ExtraFile("symbolic links are not allowed in a bundle", where=rel)
        if path.is_dir():
            continue
        if not path.is_file():
            raise e.ExtraFile("not a regular file", where=rel)
        # the in-folder tarball is compressed: it gets the compressed-size cap
        gz = rel.endswith(".tar.gz") and "/" not in rel
        data = _read_bounded(
            path, rel, limits.compressed_bytes if gz else member_limit(rel, limits)
        )
        total += 0 if gz else len(data)
        if total > limits.total_bytes:
            raise e.LimitExceeded(
                f"files add up to more than {limits.total_bytes} bytes", where=rel
            )
        files[rel] = data
    return files


@contextmanager
def _opened(path: Path, limits: ReadLimits) -> Iterator[_State]:
    if path.is_dir():
        yield _State(path, _read_tree(path, limits), is_directory=True)
        return
    if not path.is_file():
        what = "no such bundle directory or tarball"
        if path.exists():
            what = f"{kind_of(path.stat().st_mode)}, not a bundle directory or tarball"
        raise e.BundleUnreadable(what, where=str(path))
    data = _read_bounded(path, str(path), limits.compressed_bytes)
    top, members = read_tarball(data, str(path), limits)
    with tempfile.TemporaryDirectory(prefix="tinyrustlm-verify-") as tmp:
        root = Path(tmp)
        for rel, content in members.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        yield _State(
            root, members, is_directory=False, top_folder=top, tarball=data, source=str(path)
        )


# -- steps 2-4 ----------------------------------------------------------------------------
def _check_signatures(state: _State, root: TrustRoot, allow_dev_key: bool, now: int) -> str:
    for name in SIGNED_FILES:
        if name not in state.files:
            raise e.MissingFile("signature bundle is missing", where=name)
        counted = check_envelope(
            state.files[name], name, SIGNED_DOCUMENT[name], root, allow_dev_key, now
        )
        state.signed[name] = counted.bundle
        state.signers[name] = counted.signers
    manifest_keys, provenance_keys = (
        {k.keyid for k in state.signers[n]} for n in (MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE)
    )
    if root.one_signer and manifest_keys != provenance_keys:
        raise e.SignersDiffer(
            f"manifest signed by {_short(manifest_keys)}, provenance by "
            f"{_short(provenance_keys)}; one release key signs both (unless the trusted-keys "
            'file says "signers": "any-trusted-key")',
            where=f"{PROVENANCE_SIGNATURE}: dsseEnvelope.signatures[0].keyid",
        )
    parts = []
    for name, signers in state.signers.items():
        rule = root.rule(SIGNED_DOCUMENT[name])
        keys = ", ".join(f"{k.keyid[:16]}… ({k.role})" for k in signers)
        parts.append(f"{SIGNED_DOCUMENT[name]} {len(signers)} of {rule.threshold}: {keys}")
    return "; ".join(parts)


def _check_keyless(state: _State, want: KeylessIdentity | None) -> str:
    if want is None:
        return ""
    if KEYLESS_SIGNATURE not in state.files:
        raise e.KeylessRefused(
            f"a keyless signature by {want.identity!r} is required, the bundle has none "
            "(the release job adds it with `tinyrustlm-release sign BUNDLE --keyless`)",
            where=KEYLESS_SIGNATURE,
        )
    if MANIFEST not in state.files:
        raise e.MissingFile("the bundle has no manifest.json", where=MANIFEST)
    summary = verify_keyless(
        state.files[MANIFEST], state.files[KEYLESS_SIGNATURE], want, KEYLESS_SIGNATURE
    )
    return f"; {summary}"


def _short(keyids: set[str]) -> str:
    return ", ".join(f"{k[:16]}…" for k in sorted(keyids))


def _check_hints(state: _State) -> str:
    for name, bundle in state.signed.items():
        keyids = [s.keyid for s in bundle.envelope.signatures]
        if bundle.hint not in keyids:
            raise e.HintMismatch(
                f"publicKey.hint {bundle.hint[:16]}… is not the keyid of any signature "
                f"({_short(set(keyids))})",
                where=f"{name}: verificationMaterial.publicKey.hint",
            )
    return "each hint names one of its signatures"


def _check_payload_types(state: _State) -> str:
    for name, expected in SIGNED_FILES.items():
        actual = state.signed[name].envelope.payload_type
        if actual != expected:
            raise e.PayloadTypeMismatch(
                f"payloadType {actual!r}, expected {expected!r}",
                where=f"{name}: dsseEnvelope.payloadType",
            )
    return "manifest + in-toto"


# -- step 5 -------------------------------------------------------------------------------
def _check_manifest(state: _State, now: int, version_floor: str | None) -> str:
    payload = state.signed[MANIFEST_SIGNATURE].envelope.payload
    where = f"{MANIFEST_SIGNATURE}: payload"
    try:
        doc = parse_json(payload, where)
    except MalformedJson as exc:
        raise e.ManifestInvalid(exc.message, where=where, offset=exc.offset) from exc
    if canonical_json(doc) != payload:
        raise e.ManifestInvalid("signed manifest is not canonical JSON (RFC 8785)", where=where)
    try:
        manifest = ModuleManifest.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        field_name = ".".join(str(p) for p in first["loc"])
        raise e.ManifestInvalid(first["msg"], where=f"{where}: {field_name}") from exc
    if MANIFEST not in state.files:
        raise e.MissingFile("the bundle has no manifest.json", where=MANIFEST)
    if state.files[MANIFEST] != payload:
        raise e.ManifestMismatch(
            "manifest.json is not byte-identical to the signed manifest payload", where=MANIFEST
        )
    for signer in state.signers[MANIFEST_SIGNATURE]:
        if manifest.key_class != signer.role:
            raise e.KeyClassMismatch(
                f"manifest says key_class {manifest.key_class!r}, the role of signing key "
                f"{signer.keyid[:16]}… is {signer.role!r}",
                where=f"{MANIFEST}: key_class",
            )
    if now >= manifest.expires_epoch:
        raise e.ManifestExpired(
            f"manifest expired at epoch {manifest.expires_epoch} (now {now})",
            where=f"{MANIFEST}: expires_epoch",
        )
    if version_floor is not None:
        _check_version_floor(manifest.version, version_floor)
    state.manifest = manifest
    return f"version {manifest.version}, revision {manifest.source_revision[:12]}"


def _check_version_floor(version: str, floor: str) -> None:
    have, least = version_key(version), version_key(floor)
    if least is None:
        raise ValueError(f"--not-before-version {floor!r} is not a PEP 440 version")
    where = f"{MANIFEST}: version"
    if have is None:
        raise e.VersionBelowFloor(
            f"version {version!r} is not a PEP 440 version: cannot compare it to {floor}",
            where=where,
        )
    if have < least:
        raise e.VersionBelowFloor(
            f"version {version} is older than the accepted floor {floor} (a rollback?)",
            where=where,
        )


# -- steps 6-7 ----------------------------------------------------------------------------
def _check_listed_digests(state: _State) -> str:
    manifest = _manifest(state)
    listed = manifest.listed_files()
    by_digest = {sha: url for url, sha in listed}
    sizes = {url: size for url, _, size in manifest.listed_sizes()}
    for url, sha in listed:
        data = state.files.get(url)
        if data is None:
            raise e.MissingFile("listed in the manifest but not in the bundle", where=url)
        actual = _sha(data)
        if actual == sha and len(data) == sizes[url]:
            continue
        if actual in by_digest and by_digest[actual] != url:
            raise e.ArtifactSwapped(
                f"holds the bytes the manifest lists for {by_digest[actual]}", where=url
            )
        raise e.DigestMismatch(
            f"sha256 {actual[:16]}… ({len(data)} bytes), manifest says {sha[:16]}… "
            f"({sizes[url]} bytes)",
            where=url,
        )
    recomputed = build_id(manifest, state.files)
    if recomputed != manifest.build_id:
        raise e.BuildIdMismatch(
            f"build id recomputes to {recomputed[:16]}…, manifest says {manifest.build_id[:16]}…",
            where=f"{MANIFEST}: build_id",
        )
    return f"{len(listed)} files, build id {manifest.build_id[:16]}…"


def _expected_files(state: _State) -> set[str]:
    manifest = _manifest(state)
    expected = {url for url, _ in manifest.listed_files()} | set(FIXED_FILES)
    expected |= {name for name in OPTIONAL_ATTESTED_FILES if name in state.files}
    expected |= {KEYLESS_SIGNATURE} & state.files.keys()
    if state.is_directory:
        expected.add(tarball_name(manifest.version))
    return expected


def _check_file_set(state: _State) -> str:
    expected = _expected_files(state)
    missing = sorted(expected - state.files.keys())
    extra = sorted(state.files.keys() - expected)
    if missing:
        raise e.MissingFile(
            f"{len(missing)} file(s) missing: {', '.join(missing)}", where=missing[0]
        )
    if extra:
        raise e.ExtraFile(
            f"{len(extra)} file(s) not in the manifest: {', '.join(extra)}", where=extra[0]
        )
    return f"{len(expected)} files"


# -- steps 8-9, 11 ------------------------------------------------------------------------
def _attested(state: _State) -> dict[str, str]:
    names = [url for url, _ in _manifest(state).listed_files()] + list(ATTESTED_FIXED_FILES)
    names += [name for name in OPTIONAL_ATTESTED_FILES if name in state.files]
    return {name: _sha(state.files[name]) for name in names}


def _diff(claimed: dict[str, str], actual: dict[str, str]) -> str:
    wrong = sorted(n for n in claimed.keys() & actual.keys() if claimed[n] != actual[n])
    missing = sorted(actual.keys() - claimed.keys())
    extra = sorted(claimed.keys() - actual.keys())
    parts = [
        f"{label}: {', '.join(names)}"
        for label, names in (
            ("digest differs", wrong),
            ("not named", missing),
            ("names unknown files", extra),
        )
        if names
    ]
    return "; ".join(parts)


def _check_provenance(state: _State) -> str:
    where = f"{PROVENANCE_SIGNATURE}: payload"
    try:
        statement = parse_json(state.signed[PROVENANCE_SIGNATURE].envelope.payload, where)
    except MalformedJson as exc:
        raise e.ProvenanceInvalid(exc.message, where=where, offset=exc.offset) from exc
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise e.ProvenanceInvalid(f"not an in-toto Statement ({STATEMENT_TYPE})", where=where)
    if statement.get("predicateType") != SLSA_PREDICATE_TYPE:
        raise e.ProvenanceInvalid(f"predicateType is not {SLSA_PREDICATE_TYPE}", where=where)
    claimed: dict[str, str] = {}
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise e.ProvenanceInvalid("no subjects", where=f"{where}: subject")
    for i, subject in enumerate(subjects):
        digest = subject.get("digest") if isinstance(subject, dict) else None
        name = subject.get("name") if isinstance(subject, dict) else None
        if (
            not isinstance(name, str)
            or not isinstance(digest, dict)
            or not isinstance(digest.get("sha256"), str)
            or name in claimed
        ):
            raise e.ProvenanceInvalid(
                "subject needs a unique name and a sha256 digest", where=f"{where}: subject[{i}]"
            )
        claimed[name] = digest["sha256"]
    problems = _diff(claimed, _attested(state))
    if problems:
        raise e.ProvenanceMismatch(f"subjects do not match the files: {problems}", where=where)
    predicate = statement.get("predicate")
    revision = _dig(predicate, "buildDefinition", "externalParameters", "source", "revision")
    if revision != _manifest(state).source_revision:
        raise e.ProvenanceMismatch(
            f"provenance source revision {revision!r} is not the manifest's",
            where=f"{where}: predicate.buildDefinition.externalParameters.source.revision",
        )
    return f"{len(claimed)} subjects"


def _check_sbom(state: _State) -> str:
    try:
        sbom = parse_json(state.files[SBOM], SBOM)
    except MalformedJson as exc:
        raise e.SbomInvalid(exc.message, where=SBOM, offset=exc.offset) from exc
    if (
        not isinstance(sbom, dict)
        or sbom.get("bomFormat") != "CycloneDX"
        or sbom.get("specVersion") != "1.6"
        or not isinstance(sbom.get("components"), list)
    ):
        raise e.SbomInvalid("not a CycloneDX 1.6 JSON document", where=SBOM)
    claimed: dict[str, str] = {}
    for i, component in enumerate(sbom["components"]):
        if not isinstance(component, dict) or component.get("type") != "file":
            continue
        hashes = [
            h.get("content")
            for h in component.get("hashes", [])
            if isinstance(h, dict) and h.get("alg") == "SHA-256"
        ]
        name = component.get("name")
        if not isinstance(name, str) or len(hashes) != 1 or not isinstance(hashes[0], str):
            raise e.SbomInvalid(
                "file component needs a name and one SHA-256", where=f"{SBOM}: components[{i}]"
            )
        claimed[name] = hashes[0]
    actual = {url: _sha(state.files[url]) for url, _ in _manifest(state).listed_files()}
    problems = _diff(claimed, actual)
    if problems:
        raise e.SbomMismatch(f"file components do not match the files: {problems}", where=SBOM)
    return f"{len(claimed)} file components"


def _check_checksums(state: _State) -> str:
    manifest = _manifest(state)
    tarball = tarball_name(manifest.version)
    listed = parse_checksums(state.files[CHECKSUMS])
    if listed is None:
        raise e.ChecksumsMismatch("not `<sha256>  <path>` lines", where=CHECKSUMS)
    actual = {n: _sha(d) for n, d in state.files.items() if n not in (CHECKSUMS, tarball)}
    problems = _diff(listed, actual)
    if problems:
        raise e.ChecksumsMismatch(problems, where=CHECKSUMS)
    where = tarball if state.is_directory else state.source  # the file the user gave
    if not state.is_directory and state.top_folder != bundle_name(manifest.version):
        raise e.TarballMismatch(
            f"top folder {state.top_folder!r} is not {bundle_name(manifest.version)!r}",
            where=where,
        )
    # The tarball is a pure function of the files: rebuild it and compare every byte (gzip
    # header, CRC, ISIZE, tar headers, padding, no trailing member), never unpack it here.
    rebuilt = deterministic_tarball(
        bundle_name(manifest.version),
        {n: d for n, d in state.files.items() if n != tarball},
        manifest.source_date_epoch,
        frozenset(a.url for a in manifest.native_artifacts),
    )
    data = state.files[tarball] if state.is_directory else state.tarball
    if data != rebuilt:
        raise explain_difference(data, rebuilt, where)
    return f"{len(listed)} checksums, tarball rebuilt byte for byte ({len(rebuilt)} bytes)"


# -- step 10 ------------------------------------------------------------------------------
def _check_builder_paths(state: _State) -> str:
    documents = {
        MANIFEST: state.signed[MANIFEST_SIGNATURE].envelope.payload,
        PROVENANCE_SIGNATURE: state.signed[PROVENANCE_SIGNATURE].envelope.payload,
    }
    # every signed file that is a document (JSON), the ones above included once
    documents.update({n: state.files[n] for n in sorted(_attested(state)) if n.endswith(".json")})
    for name, data in documents.items():
        try:
            doc = parse_json(data, name)
        except MalformedJson as exc:
            raise e.BuilderPathLeaked(exc.message, where=name, offset=exc.offset) from exc
        leaked = absolute_paths_outside(doc)
        if leaked:
            first = leaked[0]
            raise e.BuilderPathLeaked(
                f"names the builder's absolute path {first.path!r} ({len(leaked)} in all); "
                "signed documents name locations as $WORKSPACE/... or $CARGO_HOME/...",
                where=f"{name}: {first.where.lstrip('.')}",
            )
    return f"{len(documents)} documents"


# -- step 12 ------------------------------------------------------------------------------
def _check_report(state: _State, derive: Deriver | None) -> str:
    manifest = _manifest(state)
    shipped = findings_by_lane(read_report(state.files[REPORT], REPORT), REPORT)
    artifacts = [(state.root / url, lane) for url, lane in manifest.lanes()]
    derived = findings_by_lane((derive or default_deriver())(artifacts), "the verifier's report")
    for lane in sorted(derived.keys() | shipped.keys()):
        if derived.get(lane) != shipped.get(lane):
            raise e.ReportMismatch(
                f"lane {lane}: the bundle's findings differ from re-inspection with the "
                "verifier's policy",
                where=f"{REPORT}: {lane}",
            )
        failing = [fid for fid, ok, _ in derived[lane] if not ok]
        if failing:
            raise e.ReportMismatch(
                f"lane {lane}: failing findings {', '.join(failing)}", where=f"{REPORT}: {lane}"
            )
    total = sum(len(rows) for rows in derived.values())
    return f"{len(derived)} artifacts, {total} findings, all pass"


# -- step 14 ------------------------------------------------------------------------------
def _check_rebuilds(
    state: _State, policy: RebuildPolicy | None, now: int, release_keys: Set[str]
) -> str:
    if policy is None or policy.required == 0:
        return "not required"
    manifest = _manifest(state)
    digests = dict(manifest.listed_files())
    subjects = Subjects(
        artifacts={url: digests[url] for url, _ in manifest.lanes()},
        signed={
            MANIFEST: _sha(state.files[MANIFEST]),
            PROVENANCE_STATEMENT: _sha(state.signed[PROVENANCE_SIGNATURE].envelope.payload),
        },
    )
    verdicts = count_rebuilds(policy, manifest, now, subjects, release_keys)
    have = independent(verdicts)
    covers = "every artifact" if policy.scope == "artifacts" else "every signed file"
    if have < policy.required:
        reasons = "; ".join(f"{Path(v.path).name}: {v.reason}" for v in verdicts) or "none given"
        raise e.RebuildsInsufficient(
            f"{have} independent trusted rebuild(s) reproduced {covers}, "
            f"{policy.required} required ({reasons})",
            where="--rebuild-attestation",
        )
    counted = ", ".join(f"{v.keyid[:16]}…" for v in verdicts if v.counts)
    return (
        f"{have} of {len(policy.rebuilders)} rebuilders ({counted}) reproduced {covers} "
        f"(scope {policy.scope}), {policy.required} required"
    )


def _manifest(state: _State) -> ModuleManifest:
    assert state.manifest is not None, "step 5 sets the manifest"
    return state.manifest


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def verify_bundle(
    path: Path,
    trusted: TrustRoot | dict[str, TrustedKey],
    *,
    allow_dev_key: bool,
    now: int,
    derive: Deriver | None = None,
    progress: Progress | None = None,
    one_signer: bool = True,
    version_floor: str | None = None,
    limits: ReadLimits = HARD_LIMITS,
    require_engines: Sequence[str] = (),
    rebuilds: RebuildPolicy | None = None,
    keyless: KeylessIdentity | None = None,
) -> Verdict:
    """Run steps 1-14; raises the first failing step's `BundleRejected` subclass.

    `trusted`: the trust root (its signing policy), or bare keys (v1 rule: threshold 1, and
    `one_signer` is "one-key", see `verify.bundle.trusted_keys`); `version_floor`:
    refuse a manifest version below it (PEP 440; a bad floor is a ValueError);
    `rebuilds`: step 14's K-of-N rebuild policy (None: not required); `keyless`: a Sigstore
    identity that must also have signed manifest.json (else the trust root's, if any)."""
    if version_floor is not None and version_key(version_floor) is None:
        raise ValueError(f"version floor {version_floor!r} is not a PEP 440 version")
    root = trusted if isinstance(trusted, TrustRoot) else trust_root_from_keys(trusted, one_signer)
    results: list[StepResult] = []

    def done(number: int, detail: str) -> None:
        result = StepResult(number, STEP_TITLES[number - 1], detail)
        results.append(result)
        if progress is not None:
            progress(result)

    with _opened(path, limits) as state:
        done(1, f"{len(state.files)} files ({'directory' if state.is_directory else 'tarball'})")
        signed_by = _check_signatures(state, root, allow_dev_key, now)
        done(2, signed_by + _check_keyless(state, keyless or root.keyless))
        done(3, _check_hints(state))
        done(4, _check_payload_types(state))
        done(5, _check_manifest(state, now, version_floor))
        done(6, _check_listed_digests(state))
        done(7, _check_file_set(state))
        done(8, _check_provenance(state))
        done(9, _check_sbom(state))
        done(10, _check_builder_paths(state))
        done(11, _check_checksums(state))
        done(12, _check_report(state, derive))
        conformance = state.files.get(CONFORMANCE)
        manifest_sha256 = _sha(state.files[MANIFEST])
        done(13, check_conformance(conformance, _manifest(state), manifest_sha256, require_engines))
        done(14, _check_rebuilds(state, rebuilds, now, set(root.keys)))
        manifest = _manifest(state)
        signers = state.signers[MANIFEST_SIGNATURE]
        return Verdict(
            manifest.version,
            manifest.build_id,
            signers[0].keyid,
            signers[0].role,
            len(state.files),
            tuple(results),
            tuple(k.keyid for k in signers),
        )
