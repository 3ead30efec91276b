"""`tinyrustlm-verify bundle DIR|TARBALL --trusted-keys FILE [--allow-dev-key]
[--certificate-identity ID --certificate-oidc-issuer URL [--sigstore-instance staging]]
[--not-before-version V] [--json] [--rebuilders FILE --require-rebuilds K
--rebuild-attestation FILE ...]`.

Exit codes: 0 verified; 1 rejected (a step failed: the error id names which check);
2 bad arguments; 3 the bundle or the trusted-keys file could not be read at all.
With --json (the shell's flag), every outcome (including unreadable input and arguments that
do not go together) prints one `tinyrustlm.bundle-verification.v1` result.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from verify.bundle.errors import ResourceLimit
from verify.bundle.keyless import SIGSTORE_INSTANCES, KeylessIdentity, required_identity
from verify.bundle.rebuilds import SCOPES, RebuildPolicy
from verify.bundle.step_titles import STEP_TITLES
from verify.bundle.trusted_keys import TrustRoot, load_trust_root
from verify.bundle.verifier import BundleVerifier, Requirements, StepResult
from verify.bundle.versions import version_key
from verify.errors import EXIT_OK, EXIT_USAGE, IoFailed, VerifyError
from verify.formats.bundle_verification import BundleVerification, StepOutcome, VerificationError
from verify.formats.conformance import KNOWN_ENGINES
from verify.formats.release_version import RELEASE_VERSION_TEXT
from verify.shell.arguments import add_trust_arguments
from verify.shell.result import Outcome
from verify.shell.terminal import print_diagnostics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="bundle directory or its .tar.gz")
    add_trust_arguments(
        parser, "keys, and (v2) the signing policy: threshold, validity windows, revoked keys"
    )
    parser.add_argument(
        "--require-engines",
        default="",
        metavar="ENGINES",
        help="comma-separated engines (e.g. chromium,firefox,webkit) that must each have a "
        "passing and no failing row in the bundle's conformance.json",
    )
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
        "identity (e.g. https://github.com/OWNER/REPO/.github/workflows/release.yml@refs/tags/V); "
        "it narrows the trust policy: a policy naming another keyless identity refuses it",
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
        default=None,
        help="whose embedded trusted root verifies the keyless signature (default: the trust "
        "policy's, else production)",
    )
    parser.add_argument(
        "--not-before-version",
        type=_version,
        default=None,
        metavar="V",
        help="refuse a bundle whose version is below V (the last version you accepted)",
    )


def _flag_identity(
    args: argparse.Namespace, policy: KeylessIdentity | None
) -> KeylessIdentity | None:
    """The keyless identity the flags name (the instance, when not given, is the policy's)."""
    if args.certificate_identity is None:
        return None
    default = policy.instance if policy is not None else "production"
    instance = args.sigstore_instance or default
    return KeylessIdentity(args.certificate_identity, args.certificate_oidc_issuer, instance)


def _version(text: str) -> str:
    if version_key(text) is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a release version ({RELEASE_VERSION_TEXT}) like 1.2.0"
        )
    return text


def _progress(result: StepResult) -> None:
    total = len(STEP_TITLES)
    print(f"[{result.number:>2}/{total}] {result.title}: ok ({result.detail})", flush=True)


class BundleUsage(VerifyError):
    """`bundle` options that do not go together (checked before anything is read)."""

    exit_code = EXIT_USAGE
    error_id = "bundle.usage"
    default_hint = "see `tinyrustlm-verify bundle --help`"


def usage_refusal(args: argparse.Namespace, engines: list[str]) -> BundleUsage | None:
    """Why these options cannot run, or None."""
    if args.require_rebuilds < 0 or (args.require_rebuilds and args.rebuilders is None):
        return BundleUsage("--require-rebuilds K needs K >= 0 and --rebuilders FILE")
    wrong = [n or "(empty)" for n in engines if n not in KNOWN_ENGINES]
    if wrong:
        return BundleUsage(
            f"--require-engines: unknown engine {', '.join(wrong)}; "
            f"known: {', '.join(KNOWN_ENGINES)}"
        )
    if (args.certificate_identity is None) != (args.certificate_oidc_issuer is None):
        return BundleUsage(
            "--certificate-identity and --certificate-oidc-issuer go together: an "
            "identity is only meaningful with the issuer that vouched for it"
        )
    if args.rebuild_attestations and not args.require_rebuilds:
        return BundleUsage(
            "--rebuild-attestation is only read with --require-rebuilds K (K >= 1); "
            "an attestation nobody asked to count would be silently ignored"
        )
    return None


def prepared(args: argparse.Namespace, now: int) -> tuple[TrustRoot, Requirements]:
    """The trust root and the requirements these options ask for (read before any step runs):
    a `BundleUsage` for options that do not go together, the trust file's own errors."""
    engines = [n.strip() for n in args.require_engines.split(",")] if args.require_engines else []
    refused = usage_refusal(args, engines)
    if refused is not None:
        raise refused
    root: TrustRoot = _guarded(lambda: load_trust_root(args.trusted_keys))
    keyless = required_identity(root.keyless, _flag_identity(args, root.keyless))
    rebuilds = None
    if args.rebuilders is not None:
        rebuilders = _guarded(lambda: load_trust_root(args.rebuilders))
        rebuilds = RebuildPolicy(
            rebuilders.keys,
            args.require_rebuilds,
            tuple(args.rebuild_attestations),
            rebuilders.revoked,
            allow_dev_rebuilder=args.allow_dev_rebuilder,
            scope=args.rebuild_scope,
        )
    requires = Requirements(
        now=now,
        allow_dev_key=args.allow_dev_key,
        version_floor=args.not_before_version,
        require_engines=tuple(engines),
        rebuilds=rebuilds,
        keyless=keyless,
    )
    return root, requires


def run(args: argparse.Namespace) -> Outcome:
    now = int(time.time()) if args.at_epoch is None else args.at_epoch
    steps: list[StepResult] = []

    def record(result: StepResult) -> None:
        steps.append(result)
        if not args.json:
            _progress(result)

    try:
        root, requires = prepared(args, now)
    except VerifyError as exc:  # no step ran at all
        return _failed(args, steps, exc, step=None)
    try:
        verdict = _guarded(lambda: BundleVerifier(root).verify(args.bundle, requires, record))
    except VerifyError as exc:
        return _failed(args, steps, exc, step=len(steps) + 1)
    if args.json:
        doc = _result(steps, error=None, step=None).model_copy(
            update={
                "version": verdict.version,
                "build_id": verdict.build_id,
                "keyid": verdict.keyid,
                "key_class": verdict.key_class,
                "keyids": list(verdict.keyids),
            }
        )
        return Outcome(EXIT_OK, document=_json(doc))
    print(
        f"verified: tinyrustlm {verdict.version}, build id {verdict.build_id}, "
        f"key {', '.join(verdict.keyids)} ({verdict.key_class}), {verdict.files} files"
    )
    return Outcome(EXIT_OK)


T = TypeVar("T")


def _guarded(work: Callable[[], T]) -> T:
    """Run `work`; running out of memory or stack becomes a typed error, not a traceback."""
    try:
        return work()
    except (MemoryError, RecursionError) as exc:
        raise ResourceLimit(f"the verifier ran out of resources: {type(exc).__name__}") from exc
    except OSError as exc:  # no check anticipated it: still an id (and JSON with --json)
        raise IoFailed.of(exc) from exc


def _failed(
    args: argparse.Namespace, steps: list[StepResult], exc: VerifyError, step: int | None
) -> Outcome:
    if not args.json:
        if step is not None:
            print(f"[{step:>2}/{len(STEP_TITLES)}] {STEP_TITLES[step - 1]}: FAILED", flush=True)
        raise exc
    print_diagnostics(exc.diagnostics())
    return Outcome(exc.exit_code, document=_json(_result(steps, error=exc, step=step)))


def _result(
    steps: list[StepResult], error: VerifyError | None, step: int | None
) -> BundleVerification:
    failure = None
    if error is not None:
        failure = VerificationError(
            id=error.error_id,
            message=error.message,
            where=error.where,
            step=step,
            exit_code=error.exit_code,
        )
    return BundleVerification(
        ok=error is None,
        steps=[StepOutcome(number=s.number, title=s.title, detail=s.detail) for s in steps],
        error=failure,
    )


def _json(doc: BundleVerification) -> str:
    return json.dumps(doc.model_dump(mode="json", by_alias=True), indent=2, sort_keys=True)
