"""K-of-N independent rebuilds: which signed rebuild attestations count for a bundle.

An attestation (`reproduce --attest`, verify/formats/rebuild.py) counts when all hold:
  - it is a sigstore bundle with exactly one DSSE signature, by a key in the rebuilders file
    (trusted-keys format, v1 or v2), not revoked by that file and within the key's window
    [not_before, not_after) at the verification time, verifying over PAE as received
    (a development-role key only with --allow-dev-rebuilder), and its hint names that key;
  - the key is independent of the release: no key of the release's trusted-keys (and so not
    the key that signed it) ever counts as a rebuilder;
  - its payload is an in-toto Statement with the rebuild build type, for this bundle's
    source revision (and, in scope "bundle", its build id);
  - its subjects name every file the scope requires with exactly this bundle's SHA-256:
      scope "bundle" (the default): every artifact, manifest.json and the provenance
        statement, i.e. every signed file (the statement's subjects digest the JS files,
        SBOM, report and conformance.json; the manifest digests the artifacts and JS files
        and holds disabled_lanes): a changed loader.js or disabled_lanes is not vouched for;
      scope "artifacts" (named by the user, `--rebuild-scope artifacts`): every artifact
        only, for this source revision, whatever the build id: the rule that lets a rebuild
        of the same commit vouch for the binaries of a re-release that changed only signed
        documents (e.g. `release --disable-lane`); the verdict says the rest is not covered;
  - no earlier attestation by the same key counted (one key, one rebuild).
Anything else is recorded with the reason it does not count; it is never an error by itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from verify.bundle.dsse import parse_sigstore_bundle, verify_signature
from verify.bundle.errors import BundleRejected, RebuildsInsufficient
from verify.bundle.file_digests import sha256_hex
from verify.bundle.layout import MANIFEST, PROVENANCE_STATEMENT
from verify.bundle.trusted_keys import TrustedKey
from verify.canonical import MalformedJson, parse_json
from verify.formats.in_toto import IN_TOTO_PAYLOAD_TYPE
from verify.formats.manifest import ModuleManifest
from verify.formats.rebuild import RebuildStatement
from verify.inputs import InputError, read_regular_file

RebuildScope = Literal["bundle", "artifacts"]
SCOPES: tuple[RebuildScope, ...] = ("bundle", "artifacts")


@dataclass(frozen=True)
class RebuildPolicy:
    rebuilders: dict[str, TrustedKey]
    required: int
    attestations: tuple[Path, ...]
    revoked: Mapping[str, str]  # keyid -> reason (the rebuilders file's own revocations)
    allow_dev_rebuilder: bool = False
    scope: RebuildScope = "bundle"


@dataclass(frozen=True)
class Counted:
    path: str
    keyid: str  # "" when the file could not be read that far
    counts: bool
    reason: str


@dataclass(frozen=True)
class Subjects:
    """What this bundle is: the digest every attested file must have, by scope."""

    artifacts: Mapping[str, str]  # artifact url -> sha256 (the manifest's)
    signed: Mapping[str, str]  # manifest.json and the provenance statement -> sha256

    @classmethod
    def of(cls, manifest: ModuleManifest, manifest_json: bytes, statement: bytes) -> Subjects:
        """From the verified manifest, manifest.json's and the provenance statement's bytes."""
        digests = dict(manifest.listed_files())
        return cls(
            artifacts={url: digests[url] for url, _ in manifest.lanes()},
            signed={
                MANIFEST: sha256_hex(manifest_json),
                PROVENANCE_STATEMENT: sha256_hex(statement),
            },
        )

    def required(self, scope: RebuildScope) -> dict[str, str]:
        return dict(self.artifacts) if scope == "artifacts" else {**self.artifacts, **self.signed}


@dataclass(frozen=True)
class RebuildTarget:
    """The verified release an attestation must be a rebuild of, judged at time `now`."""

    manifest: ModuleManifest
    subjects: Subjects
    now: int
    release_keys: Set[str]  # the release's trusted keys: never a rebuilder

    def judge(self, policy: RebuildPolicy, path: Path, seen: set[str]) -> Counted:
        manifest, now = self.manifest, self.now
        where = str(path)
        try:  # bounded like every input (verify/inputs.py LIMITS)
            bundle = parse_sigstore_bundle(read_regular_file(path, "rebuild-attestation"), where)
        except InputError as exc:
            return Counted(where, "", False, f"unreadable: {exc.message}")
        except BundleRejected as exc:
            return Counted(where, "", False, f"not a signature bundle: {exc.message}")
        if len(bundle.envelope.signatures) != 1:
            return Counted(where, "", False, "needs exactly one signature")
        signature = bundle.envelope.signatures[0]
        keyid = signature.keyid
        key = policy.rebuilders.get(keyid)
        if key is None:
            return Counted(where, keyid, False, "key is not in the rebuilders file")
        if keyid in self.release_keys:
            return Counted(where, keyid, False, "a release key is not an independent rebuilder")
        try:
            verify_signature(bundle.envelope, signature, key.public_key, where)
        except BundleRejected as exc:
            return Counted(where, keyid, False, exc.message)
        if bundle.hint != keyid:
            return Counted(where, keyid, False, "publicKey.hint is not the signing key")
        if keyid in policy.revoked:
            return Counted(where, keyid, False, f"rebuilder key revoked ({policy.revoked[keyid]})")
        if key.not_before_epoch is not None and now < key.not_before_epoch:
            return Counted(
                where, keyid, False, "rebuilder key not yet valid (before its not_before)"
            )
        if now >= key.not_after_epoch:
            return Counted(where, keyid, False, "rebuilder key past its not_after")
        if key.role == "development" and not policy.allow_dev_rebuilder:
            return Counted(where, keyid, False, "development-role key (no --allow-dev-rebuilder)")
        if bundle.envelope.payload_type != IN_TOTO_PAYLOAD_TYPE:
            return Counted(where, keyid, False, "payloadType is not in-toto")
        try:
            parse_json(bundle.envelope.payload, f"{where}: payload")  # no duplicate keys, NaN
            statement = RebuildStatement.model_validate_json(bundle.envelope.payload, strict=True)
        except (MalformedJson, ValidationError) as exc:
            return Counted(where, keyid, False, f"not a rebuild attestation: {str(exc)[:200]}")
        release = statement.predicate.build_definition.external_parameters
        if release.source.revision != manifest.source_revision:
            return Counted(where, keyid, False, "attests another source revision")
        if policy.scope == "bundle" and release.build_id != manifest.build_id:
            return Counted(where, keyid, False, "attests another build id (another bundle)")
        attested = statement.attested()
        required = self.subjects.required(policy.scope)
        wrong = [name for name, sha in required.items() if attested.get(name) != sha]
        if wrong:
            return Counted(
                where, keyid, False, f"not reproduced or other digests: {', '.join(sorted(wrong))}"
            )
        if keyid in seen:
            return Counted(where, keyid, False, "duplicate: this key's rebuild already counted")
        seen.add(keyid)
        if policy.scope == "artifacts":
            return Counted(
                where,
                keyid,
                True,
                f"counts for the {len(required)} artifacts only (scope artifacts)",
            )
        return Counted(where, keyid, True, f"counts: {len(required)} signed files reproduced")

    def verdicts(self, policy: RebuildPolicy) -> list[Counted]:
        """One verdict per attestation, in the order given (one key counts once)."""
        seen: set[str] = set()
        return [self.judge(policy, path, seen) for path in policy.attestations]


def independent(verdicts: Sequence[Counted]) -> int:
    return sum(v.counts for v in verdicts)


def check_rebuilds(policy: RebuildPolicy | None, target: RebuildTarget) -> str:
    """Step 14: at least `policy.required` independent rebuilders reproduced `target`."""
    if policy is None or policy.required == 0:
        return "not required"
    verdicts = target.verdicts(policy)
    have = independent(verdicts)
    covers = "every artifact" if policy.scope == "artifacts" else "every signed file"
    if have < policy.required:
        reasons = "; ".join(f"{Path(v.path).name}: {v.reason}" for v in verdicts) or "none given"
        raise RebuildsInsufficient(
            f"{have} independent trusted rebuild(s) reproduced {covers}, "
            f"{policy.required} required ({reasons})",
            where="--rebuild-attestation",
        )
    counted = ", ".join(f"{v.keyid[:16]}…" for v in verdicts if v.counts)
    return (
        f"{have} of {len(policy.rebuilders)} rebuilders ({counted}) reproduced {covers} "
        f"(scope {policy.scope}), {policy.required} required"
    )
