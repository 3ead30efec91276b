"""`tinyrustlm-release trust-policy`: the maintainers' trusted-keys v2 file, from their keys.

    tinyrustlm-release trust-policy --keys alice.trusted-keys.json bob.trusted-keys.json \
        --threshold 2 --out release.trusted-keys.json [--revoke KEYID=REASON ...]

Every key of the given trusted-keys files (v1 from `keygen`, or v2) becomes one of the v2
file's keys, with its role and window, and may sign both the manifest and the provenance;
`--threshold` distinct ones of them must. The document is checked by the verifier's own
reader before it is written (`trust_policy_json`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.errors import EXIT_OK, PipelineError
from pipeline.io.atomic import write_atomic
from verify.bundle.trusted_keys import (
    trust_policy_json,
    trust_root_of,
)
from verify.canonical import parse_json
from verify.errors import VerifyError
from verify.formats.trusted_keys import (
    SIGNED_DOCUMENTS,
    TRUSTED_KEYS_SCHEMA_V2,
    RevokedKey,
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


def _entries(path: Path) -> list[TrustedKeyEntryV2]:
    try:
        data = read_regular_file(path, "trusted-keys")
        trust_root_of(data, str(path))  # a file the verifier would refuse is refused here
        doc = parse_json(data, str(path))
    except VerifyError as exc:
        raise TrustPolicyError(exc.message, where=exc.where or str(path)) from exc
    assert isinstance(doc, dict)
    return [TrustedKeyEntryV2.model_validate(entry) for entry in doc["keys"]]


def _revoked(text: str) -> RevokedKey:
    keyid, sep, reason = text.partition("=")
    if not sep or not reason:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEYID=REASON")
    try:
        return RevokedKey(keyid=keyid, reason=reason)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{keyid!r} is not a 64-hex-digit keyid") from None


def trust_policy(key_files: list[Path], threshold: int, revoked: list[RevokedKey]) -> bytes:
    keys: dict[str, TrustedKeyEntryV2] = {}
    for path in key_files:
        for entry in _entries(path):
            if entry.keyid in keys and keys[entry.keyid] != entry:
                raise TrustPolicyError(
                    f"key {entry.keyid[:16]}… is listed twice with different windows or roles",
                    where=str(path),
                )
            keys[entry.keyid] = entry
    keyids = sorted(keys)
    if threshold < 1:
        raise TrustPolicyError(f"threshold {threshold}: at least one key must sign")
    rule = SigningRule(keyids=keyids, threshold=threshold)
    doc = TrustedKeysFileV2.model_validate(
        {
            "schema": TRUSTED_KEYS_SCHEMA_V2,
            "keys": [keys[k] for k in keyids],
            "policy": dict.fromkeys(SIGNED_DOCUMENTS, rule),
            "revoked": revoked,
        }
    )
    try:
        return trust_policy_json(doc)
    except VerifyError as exc:
        raise TrustPolicyError(exc.message, where=exc.where) from exc


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
        required=True,
        metavar="K",
        help="how many distinct keys must sign the manifest and the provenance",
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
    print(f"trust policy {args.out}: {args.threshold} of the keys in {len(args.keys)} file(s)")
    keys = [str(k) for k in args.keys]
    return Outcome(EXIT_OK, {"out": str(args.out), "threshold": args.threshold, "keys": keys})
