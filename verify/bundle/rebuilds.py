"""K-of-N independent rebuilds: which signed rebuild attestations count for a bundle.

An attestation (`reproduce --attest`, verify/formats/rebuild.py) counts when all hold:
  - it is a sigstore bundle with exactly one DSSE signature, by a key in the rebuilders file
    (trusted-keys format), before that key's not_after, verifying over PAE as received
    (a development-role key only with --allow-dev-key), and its hint names that key;
  - its payload is an in-toto Statement with the rebuild build type, for this bundle's
    source revision and build id;
  - its subjects name every artifact of the manifest with exactly the manifest's SHA-256;
  - no earlier attestation by the same key counted (one key, one rebuild).
Anything else is recorded with the reason it does not count; it is never an error by itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from verify.bundle.dsse import IN_TOTO_PAYLOAD_TYPE, parse_sigstore_bundle, verify_signature
from verify.bundle.errors import BundleRejected
from verify.bundle.trusted_keys import TrustedKey
from verify.canonical import MalformedJson, parse_json
from verify.formats.manifest import ModuleManifest
from verify.formats.rebuild import RebuildStatement
from verify.inputs import InputError, read_regular_file


@dataclass(frozen=True)
class RebuildPolicy:
    rebuilders: dict[str, TrustedKey]
    required: int
    attestations: tuple[Path, ...]
    allow_dev_key: bool = False


@dataclass(frozen=True)
class Counted:
    path: str
    keyid: str  # "" when the file could not be read that far
    counts: bool
    reason: str


def _judge(
    path: Path, policy: RebuildPolicy, manifest: ModuleManifest, now: int, seen: set[str]
) -> Counted:
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
    try:
        verify_signature(bundle.envelope, signature, key.public_key, where)
    except BundleRejected as exc:
        return Counted(where, keyid, False, exc.message)
    if bundle.hint != keyid:
        return Counted(where, keyid, False, "publicKey.hint is not the signing key")
    if now >= key.not_after_epoch:
        return Counted(where, keyid, False, "rebuilder key past its not_after")
    if key.role == "development" and not policy.allow_dev_key:
        return Counted(where, keyid, False, "development-role key (no --allow-dev-key)")
    if bundle.envelope.payload_type != IN_TOTO_PAYLOAD_TYPE:
        return Counted(where, keyid, False, "payloadType is not in-toto")
    try:
        statement = RebuildStatement.model_validate(
            parse_json(bundle.envelope.payload, f"{where}: payload")
        )
    except (MalformedJson, ValidationError) as exc:
        return Counted(where, keyid, False, f"not a rebuild attestation: {str(exc)[:200]}")
    release = statement.predicate.build_definition.external_parameters
    if (release.source.revision, release.build_id) != (manifest.source_revision, manifest.build_id):
        return Counted(where, keyid, False, "attests another release (revision or build id)")
    attested = statement.attested()
    wrong = [
        url
        for url, _ in manifest.lanes()
        if attested.get(url) != dict(manifest.listed_files())[url]
    ]
    if wrong:
        return Counted(where, keyid, False, f"other digests or no subject for {', '.join(wrong)}")
    if keyid in seen:
        return Counted(where, keyid, False, "duplicate: this key's rebuild already counted")
    seen.add(keyid)
    return Counted(where, keyid, True, "counts")


def count_rebuilds(policy: RebuildPolicy, manifest: ModuleManifest, now: int) -> list[Counted]:
    seen: set[str] = set()
    return [_judge(path, policy, manifest, now, seen) for path in policy.attestations]


def independent(verdicts: Sequence[Counted]) -> int:
    return sum(v.counts for v in verdicts)
