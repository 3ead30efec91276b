"""`tinyrustlm-verify bundle DIR|TARBALL --trusted-keys FILE [--allow-dev-key] [--json]`.

Exit codes: 0 verified; 1 rejected (a step failed: the error id names which check);
2 bad arguments; 3 the bundle or the trusted-keys file could not be read at all.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from verify.bundle.errors import TrustedKeysInvalid
from verify.bundle.trusted_keys import load_trusted_keys
from verify.bundle.verifier import STEP_TITLES, StepResult, verify_bundle
from verify.errors import EXIT_OK, VerifyError
from verify.formats.bundle_verification import BundleVerification, StepOutcome, VerificationError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="bundle directory or its .tar.gz")
    parser.add_argument(
        "--trusted-keys",
        type=Path,
        required=True,
        metavar="FILE",
        help="trusted-keys JSON (keyid -> public key, role, not_after)",
    )
    parser.add_argument(
        "--allow-dev-key",
        action="store_true",
        help="accept a bundle signed by a development-role key",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON result on stdout")
    parser.add_argument(
        "--at-epoch",
        type=int,
        default=None,
        metavar="SECONDS",
        help="check expiry as of this Unix time instead of now",
    )


def _progress(result: StepResult) -> None:
    total = len(STEP_TITLES)
    print(f"[{result.number:>2}/{total}] {result.title}: ok ({result.detail})", flush=True)


def run(args: argparse.Namespace) -> int:
    now = int(time.time()) if args.at_epoch is None else args.at_epoch
    steps: list[StepResult] = []

    def record(result: StepResult) -> None:
        steps.append(result)
        if not args.json:
            _progress(result)

    try:
        trusted = load_trusted_keys(args.trusted_keys)
        verdict = verify_bundle(
            args.bundle, trusted, allow_dev_key=args.allow_dev_key, now=now, progress=record
        )
    except VerifyError as exc:
        failed = len(steps) + 1
        started = not isinstance(exc, TrustedKeysInvalid)  # else no step ran at all
        if not args.json:
            if started:
                title = STEP_TITLES[failed - 1]
                print(f"[{failed:>2}/{len(STEP_TITLES)}] {title}: FAILED", flush=True)
            raise
        print(_json(_result(steps, error=exc)))
        print(exc.diagnostics(), file=sys.stderr)
        return exc.exit_code
    if args.json:
        doc = _result(steps, error=None).model_copy(update={
            "version": verdict.version,
            "build_id": verdict.build_id,
            "keyid": verdict.keyid,
            "key_class": verdict.key_class,
        })  # fmt: skip
        print(_json(doc))
    else:
        print(
            f"verified: tinyrustlm {verdict.version}, build id {verdict.build_id}, "
            f"key {verdict.keyid} ({verdict.key_class}), {verdict.files} files"
        )
    return EXIT_OK


def _result(steps: list[StepResult], error: VerifyError | None) -> BundleVerification:
    return BundleVerification(
        ok=error is None,
        steps=[StepOutcome(number=s.number, title=s.title, detail=s.detail) for s in steps],
        error=None if error is None else VerificationError(
            id=getattr(error, "error_id", "verify.error"),
            message=error.message,
            where=error.where,
            step=None if isinstance(error, TrustedKeysInvalid) else len(steps) + 1,
            exit_code=error.exit_code,
        ),
    )  # fmt: skip


def _json(doc: BundleVerification) -> str:
    return json.dumps(doc.model_dump(mode="json", by_alias=True), indent=2, sort_keys=True)
