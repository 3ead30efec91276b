"""`tinyrustlm-release trust-policy`: the maintainers' trusted-keys v2 file, from their keys.

    tinyrustlm-release trust-policy --keys alice.trusted-keys.json bob.trusted-keys.json \
        --threshold 2 --out release.trusted-keys.json [--revoke KEYID=REASON ...]

Every key of the given trusted-keys files (v1 from `keygen`, or v2) becomes one of the v2
file's keys, with its role and window. The output never trusts more than its inputs say:
  - from v1 files only: every key may sign both the manifest and the provenance, and
    `--threshold` distinct ones of them must;
  - a v2 file given as input keeps every field it has (its per-document rules, revoked keys,
    keyless identity, and whatever a later v2 field holds): the keys it lets sign a document
    still do and no others, its revocations stay, `--revoke` adds to them; a key that only a
    v1 input brings may sign both documents; `--threshold`, when given, sets every
    document's threshold (without it, the v2 file's thresholds are kept). Several v2 inputs
    must agree on everything but their keys and revocations (which are merged).
So `trust-policy --keys P.json --out Q.json` writes P again (keys ordered by keyid). The
document is checked by the verifier's own reader before it is written (`trust_policy_json`).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import EXIT_OK, PipelineError
from pipeline.io.atomic import write_atomic
from verify.bundle.trusted_keys import (
    trust_policy_json,
    trust_root_of,
)
from verify.canonical import parse_json
from verify.errors import VerifyError
from verify.formats.base import strict_model
from verify.formats.trusted_keys import (
    SIGNED_DOCUMENTS,
    TRUSTED_KEYS_SCHEMA_V2,
    RevokedKey,
    SignedDocument,
    SigningRule,
    TrustedKeyEntryV2,
    TrustedKeysFileV2,
)
from verify.inputs import read_regular_file
from verify.shell.arguments import at_least_one
from verify.shell.result import Outcome


class TrustPolicyError(PipelineError):
    """The keys or the policy asked for cannot make a trusted-keys file."""

    error_id = "trust-policy.invalid"
    default_hint = (
        "give --keys the NAME.trusted-keys.json files `keygen` wrote, each key once, and "
        "--threshold between 1 and their number"
    )


@dataclass(frozen=True)
class _Input:
    """One --keys file: its keys, and the whole document when it is a v2 policy."""

    path: Path
    keys: list[TrustedKeyEntryV2]
    policy: TrustedKeysFileV2 | None


def _read(path: Path) -> _Input:
    try:
        data = read_regular_file(path, "trusted-keys")
        trust_root_of(data, str(path))  # a file the verifier would refuse is refused here
        doc = parse_json(data, str(path))
    except VerifyError as exc:
        raise TrustPolicyError(exc.message, where=exc.where or str(path)) from exc
    assert isinstance(doc, dict)
    if doc.get("schema") == TRUSTED_KEYS_SCHEMA_V2:
        v2 = strict_model(TrustedKeysFileV2, doc)
        return _Input(path, list(v2.keys), v2)
    keys = [strict_model(TrustedKeyEntryV2, entry) for entry in doc["keys"]]
    return _Input(path, keys, None)


# The fields merged across inputs; every other field of a v2 input is kept as it is.
_MERGED = frozenset({"keys", "policy", "revoked"})


def _revoked(text: str) -> RevokedKey:
    keyid, sep, reason = text.partition("=")
    if not sep or not reason:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEYID=REASON")
    try:
        return RevokedKey(keyid=keyid, reason=reason)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{keyid!r} is not a 64-hex-digit keyid") from None


def _keys(inputs: list[_Input]) -> dict[str, TrustedKeyEntryV2]:
    keys: dict[str, TrustedKeyEntryV2] = {}
    for source in inputs:
        for entry in source.keys:
            if entry.keyid in keys and keys[entry.keyid] != entry:
                raise TrustPolicyError(
                    f"key {entry.keyid[:16]}… is listed twice with different windows or roles",
                    where=str(source.path),
                )
            keys[entry.keyid] = entry
    return keys


def _revocations(inputs: list[_Input], revoked: list[RevokedKey]) -> list[RevokedKey]:
    """Every input policy's revocations, then --revoke's; a key revoked once, for one reason."""
    listed = [r for source in inputs if source.policy for r in source.policy.revoked]
    merged: dict[str, RevokedKey] = {}
    for entry in [*listed, *revoked]:
        if entry.keyid in merged and merged[entry.keyid] != entry:
            raise TrustPolicyError(
                f"key {entry.keyid[:16]}… is revoked twice with different reasons "
                f"({merged[entry.keyid].reason!r}, {entry.reason!r})",
                where="--revoke",
            )
        merged[entry.keyid] = entry
    return list(merged.values())


def _base(inputs: list[_Input]) -> dict[str, object]:
    """The fields every v2 input keeps as they are (all but the merged ones: they must agree)."""
    kept = [
        (s.path, s.policy.model_dump(by_alias=True, exclude=set(_MERGED)))
        for s in inputs
        if s.policy is not None
    ]
    for path, other in kept[1:]:
        first = kept[0][1]
        if other != first:
            field = next(k for k in sorted({*first, *other}) if first.get(k) != other.get(k))
            raise TrustPolicyError(
                f"two v2 policies disagree on {field!r}: merge them by hand", where=str(path)
            )
    return kept[0][1] if kept else {"schema": TRUSTED_KEYS_SCHEMA_V2}


def _rules(
    policies: list[TrustedKeysFileV2], keyids: list[str], threshold: int | None
) -> dict[SignedDocument, SigningRule]:
    """Each document's rule: the v2 inputs' keyids (which must agree on the documents' rules
    but their keys) plus every key no v2 input brought; `threshold` when given."""
    from_v2 = {e.keyid for p in policies for e in p.keys}
    added = [k for k in keyids if k not in from_v2]
    rules: dict[SignedDocument, SigningRule] = {}
    for document in SIGNED_DOCUMENTS:
        allowed = {k for p in policies for k in p.policy[document].keyids}
        thresholds = {p.policy[document].threshold for p in policies}
        if threshold is None and len(thresholds) > 1:
            raise TrustPolicyError(
                f"the v2 inputs ask {sorted(thresholds)} signatures on the {document}: "
                "pass --threshold K"
            )
        k = threshold if threshold is not None else thresholds.pop()
        rules[document] = SigningRule(
            keyids=[key for key in keyids if key in allowed or key in added], threshold=k
        )
    return rules


def trust_policy(key_files: list[Path], threshold: int | None, revoked: list[RevokedKey]) -> bytes:
    """The v2 document of `key_files` (see the module docstring for the merge rule)."""
    if threshold is not None and threshold < 1:
        raise TrustPolicyError(f"threshold {threshold}: at least one key must sign")
    inputs = [_read(path) for path in key_files]
    policies = [source.policy for source in inputs if source.policy is not None]
    if threshold is None and not policies:
        raise TrustPolicyError(
            "--threshold K is needed: no --keys file is a v2 policy to keep the thresholds of",
            where="--threshold",
        )
    keys = _keys(inputs)
    keyids = sorted(keys)
    fields = {
        **_base(inputs),
        "keys": [keys[k] for k in keyids],
        "policy": _rules(policies, keyids, threshold),
        "revoked": _revocations(inputs, revoked),
    }
    try:
        return trust_policy_json(TrustedKeysFileV2.model_validate(fields))
    except VerifyError as exc:
        raise TrustPolicyError(exc.message, where=exc.where) from exc


def summary(data: bytes) -> str:
    """`manifest 2 of 3, provenance 1 of 2` for the written document."""
    doc = TrustedKeysFileV2.model_validate_json(data)
    return ", ".join(
        f"{document} {doc.policy[document].threshold} of {len(doc.policy[document].keyids)}"
        for document in SIGNED_DOCUMENTS
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keys",
        type=Path,
        nargs="+",
        required=True,
        metavar="FILE",
        help="trusted-keys files of the maintainers' keys (each `keygen` writes one)",
    )
    parser.add_argument(
        "--threshold",
        type=at_least_one("at least one key must sign"),
        default=None,
        metavar="K",
        help="how many distinct keys must sign the manifest and the provenance (needed unless "
        "a --keys file is a v2 policy, whose thresholds are then kept)",
    )
    parser.add_argument(
        "--revoke",
        type=_revoked,
        action="append",
        default=[],
        metavar="KEYID=REASON",
        help="a key whose signatures never count again (repeatable)",
    )
    parser.add_argument("--out", type=Path, required=True, help="the v2 trusted-keys file")


def run(args: argparse.Namespace) -> Outcome:
    data = trust_policy(args.keys, args.threshold, args.revoke)
    write_atomic(args.out, data)
    print(f"trust policy {args.out}: {summary(data)} key(s), from {len(args.keys)} file(s)")
    keys = [str(k) for k in args.keys]
    return Outcome(EXIT_OK, {"out": str(args.out), "threshold": args.threshold, "keys": keys})
