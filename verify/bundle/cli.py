"""`tinyrustlm-verify bundle DIR|TARBALL --trusted-keys FILE [--allow-dev-key]
[--certificate-identity ID --certificate-oidc-issuer URL [--sigstore-instance staging]]
[--not-before-version V] [--json] [--rebuilders FILE --require-rebuilds K
--rebuild-attestation FILE ...]`.

Exit codes: 0 verified; 1 rejected (a step failed: the error id names which check);
2 bad arguments; 3 the bundle or the trusted-keys file could not be read at all.
With --json, every outcome (including unreadable input) prints one JSON result.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from verify.bundle.errors import ResourceLimit
from verify.bundle.keyless import SIGSTORE_INSTANCES, KeylessIdentity
from verify.bundle.rebuilds import SCOPES, RebuildPolicy
from verify.bundle.trusted_keys import TrustRoot, load_trust_root, load_trusted_keys
from verify.bundle.verifier import STEP_TITLES, StepResult, verify_bundle
from verify.bundle.versions import version_key
from verify.errors import EXIT_OK, EXIT_USAGE, IoFailed, VerifyError
from verify.formats.bundle_verification import BundleVerification, StepOutcome, VerificationError
from verify.formats.conformance import KNOWN_ENGINES
from verify.formats.release_version import RELEASE_VERSION_TEXT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="bundle directory or its .tar.gz")
    parser.add_argument(
        "--trusted-keys",
        type=Path,
        required=True,
        metavar="FILE",
        help="trusted-keys JSON: keys, and (v2) the signing policy: threshold, validity "
        "windows, revoked keys",
    )
    parser.add_argument(
        "--allow-dev-key",
        action="store_true",
        help="accept a bundle signed by a development-role key",
    )
    parser.add_argument(
        "--require-engines",
        default="",
        metavar="ENGINES",
        help="comma-separated engines (e.g. chromium,firefox,webkit) that must each have a "
        "passing and no failing row in the bundle's conformance.json",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON result on stdout")
    parser.add_argument(
        "--rebuilders",
        type=Path,
        default=None,
        metavar="FILE",
        help="trusted-keys JSON of independent rebuilders (for --require-rebuilds)",
    )
    parser.add_argument(
        "--require-rebuilds",
        type=int,
        default=0,
        metavar="K",
        help="accept only if K independent rebuilders reproduced the bundle (default 0)",
    )
    parser.add_argument(
        "--rebuild-scope",
        choices=SCOPES,
        default="bundle",
        help="what a rebuild must have reproduced to count: every signed file (bundle, the "
        "default) or every artifact only (artifacts: e.g. a re-release with --disable-lane)",
    )
    parser.add_argument(
        "--allow-dev-rebuilder",
        action="store_true",
        help="let a development-role key of the rebuilders file count as a rebuilder",
    )
    parser.add_argument(
        "--rebuild-attestation",
        type=Path,
        action="append",
        default=[],
        dest="rebuild_attestations",
        metavar="FILE",
        help="a rebuild.<keyid>.sigstore.json from `reproduce --attest` (repeatable)",
    )
    parser.add_argument(
        "--at-epoch",
        type=int,
        default=None,
        metavar="SECONDS",
        help="check expiry as of this Unix time instead of now",
    )
    parser.add_argument(
        "--certificate-identity",
        default=None,
        metavar="ID",
        help="require a Sigstore keyless signature of manifest.json by this certificate "
        "identity (e.g. https://github.com/OWNER/REPO/.github/workflows/release.yml@refs/tags/V)",
    )
    parser.add_argument(
        "--certificate-oidc-issuer",
        default=None,
        metavar="URL",
        help="the OIDC issuer of --certificate-identity "
        "(GitHub Actions: https://token.actions.githubusercontent.com)",
    )
    parser.add_argument(
        "--sigstore-instance",
        choices=SIGSTORE_INSTANCES,
        default="production",
        help="whose embedded trusted root verifies the keyless signature (default production)",
    )
    parser.add_argument(
        "--not-before-version",
        type=_version,
        default=None,
        metavar="V",
        help="refuse a bundle whose version is below V (the last version you accepted)",
    )


def _version(text: str) -> str:
    if version_key(text) is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a release version ({RELEASE_VERSION_TEXT}) like 1.2.0"
        )
    return text


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

    if args.require_rebuilds < 0 or (args.require_rebuilds and args.rebuilders is None):
        print("error: --require-rebuilds K needs K >= 0 and --rebuilders FILE", file=sys.stderr)
        return EXIT_USAGE
    engines = [n.strip() for n in args.require_engines.split(",")] if args.require_engines else []
    wrong = [n or "(empty)" for n in engines if n not in KNOWN_ENGINES]
    if wrong:
        print(
            f"error: --require-engines: unknown engine {', '.join(wrong)}; "
            f"known: {', '.join(KNOWN_ENGINES)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if (args.certificate_identity is None) != (args.certificate_oidc_issuer is None):
        print(
            "error: --certificate-identity and --certificate-oidc-issuer go together: an "
            "identity is only meaningful with the issuer that vouched for it",
            file=sys.stderr,
        )
        return EXIT_USAGE
    keyless = None
    if args.certificate_identity is not None:
        keyless = KeylessIdentity(
            args.certificate_identity, args.certificate_oidc_issuer, args.sigstore_instance
        )
    if args.rebuild_attestations and not args.require_rebuilds:
        print(
            "error: --rebuild-attestation is only read with --require-rebuilds K (K >= 1); "
            "an attestation nobody asked to count would be silently ignored",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        root: TrustRoot = _guarded(lambda: load_trust_root(args.trusted_keys))
        rebuilds = None
        if args.rebuilders is not None:
            rebuilds = RebuildPolicy(
                _guarded(lambda: load_trusted_keys(args.rebuilders)),
                args.require_rebuilds,
                tuple(args.rebuild_attestations),
                allow_dev_rebuilder=args.allow_dev_rebuilder,
                scope=args.rebuild_scope,
            )
    except VerifyError as exc:  # no step ran at all
        return _failed(args, steps, exc, step=None)
    try:
        verdict = _guarded(
            lambda: verify_bundle(
                args.bundle,
                root,
                allow_dev_key=args.allow_dev_key,
                now=now,
                progress=record,
                version_floor=args.not_before_version,
                require_engines=engines,
                rebuilds=rebuilds,
                keyless=keyless,
            )
        )
    except VerifyError as exc:
        return _failed(args, steps, exc, step=len(steps) + 1)
    if args.json:
        doc = _result(steps, error=None, step=None).model_copy(update={
            "version": verdict.version,
            "build_id": verdict.build_id,
            "keyid": verdict.keyid,
            "key_class": verdict.key_class,
            "keyids": list(verdict.keyids),
        })  # fmt: skip
        print(_json(doc))
    else:
        print(
            f"verified: tinyrustlm {verdict.version}, build id {verdict.build_id}, "
            f"key {', '.join(verdict.keyids)} ({verdict.key_class}), {verdict.files} files"
        )
    return EXIT_OK


T = TypeVar("T")


def _guarded(work: Callable[[], T]) -> T:
    """Run `work`; running out of memory or stack becomes a typed error, not a traceback."""
    try:
        return work()
    except (MemoryError, RecursionError) as exc:
        raise ResourceLimit(f"the verifier ran out of resources: {type(exc).__name__}") from exc
    except OSError as exc:  # no check anticipated it: still an id (and JSON with --json)
        raise IoFailed.of(exc) from exc


def _failed(args: argparse.Namespace, steps: list[StepResult], exc: VerifyError, step: int | None
            ) -> int:  # fmt: skip
    if not args.json:
        if step is not None:
            print(f"[{step:>2}/{len(STEP_TITLES)}] {STEP_TITLES[step - 1]}: FAILED", flush=True)
        raise exc
    print(_json(_result(steps, error=exc, step=step)))
    print(exc.diagnostics(), file=sys.stderr)
    return exc.exit_code


def _result(steps: list[StepResult], error: VerifyError | None, step: int | None
            ) -> BundleVerification:  # fmt: skip
    return BundleVerification(
        ok=error is None,
        steps=[StepOutcome(number=s.number, title=s.title, detail=s.detail) for s in steps],
        error=None if error is None else VerificationError(
            id=error.error_id,
            message=error.message,
            where=error.where,
            step=step,
            exit_code=error.exit_code,
        ),
    )  # fmt: skip


def _json(doc: BundleVerification) -> str:
    return json.dumps(doc.model_dump(mode="json", by_alias=True), indent=2, sort_keys=True)
