"""`tinyrustlm-release release [...]`: arguments, the run, and the closing summary."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from pipeline.conformance.cli import UsageError, engine_names
from pipeline.conformance.matrix import ALL_ENGINES, Options
from pipeline.documents.keyless import ambient_token
from pipeline.documents.keys import dev_trusted_keys
from pipeline.errors import EXIT_OK, EXIT_USAGE, PipelineError
from pipeline.release.cosign import CoSignTrust, cosign_bundle
from pipeline.release.steps import (
    STEPS,
    Bundled,
    ReleaseRequest,
    build_from_records,
    release_matrix,
    run_conformance,
    run_release,
    skip_conformance,
)
from verify.bundle.layout import REPORT_PAGE
from verify.bundle.trusted_keys import TrustedKey
from verify.shell.arguments import at_least_one
from verify.shell.progress import progress_bar, step_lines
from verify.shell.result import Outcome


class ReleaseUsage(PipelineError):
    """An option given in a way `release` does not take (argparse's own exit code)."""

    error_id = "release.usage"
    default_hint = "give every records folder after one --from-records: --from-records A B C"
    exit_code = EXIT_USAGE


def _shown(path: Path) -> str:
    """`path` relative to the current folder when it is inside it (commands stay short)."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def verify_program() -> str:
    """`tinyrustlm-verify` as it runs from the current folder: the script installed beside
    this interpreter (a fresh machine has it in .venv/bin, not on PATH). The running
    virtualenv's own bin never counts as on PATH: nox puts its session's there, and the
    user's shell after `./nox -s release` has no such entry."""
    script = Path(sys.executable).parent / "tinyrustlm-verify"
    if not script.is_file():
        return "tinyrustlm-verify"
    venv = os.environ.get("VIRTUAL_ENV")
    if venv and (Path(venv) / "bin").resolve() == script.parent.resolve():
        return _shown(script)
    on_path = any(
        (Path(d) / "tinyrustlm-verify").resolve() == script.resolve()
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d
    )
    return "tinyrustlm-verify" if on_path else _shown(script)


def own_trust(done: Bundled) -> CoSignTrust:
    """The release's own key, as the trust its keyless co-signature is verified against."""
    public = done.key.private_key.public_key()
    key = TrustedKey(done.key.keyid, public, done.key.key_class, done.manifest.expires_epoch)
    return CoSignTrust({key.keyid: key}, allow_dev_key=done.key.key_class == "development")


def verify_command(done: Bundled) -> str:
    """The exact command that verifies the bundle, runnable as printed."""
    argv = [verify_program(), "bundle", _shown(done.bundle)]
    if done.key.key_class == "development":
        argv += ["--trusted-keys", _shown(dev_trusted_keys(done.tree.root)), "--allow-dev-key"]
    else:  # the release key's trusted-keys file is the maintainer's, not in the tree
        argv += ["--trusted-keys", "RELEASE.trusted-keys.json"]
    return shlex.join(argv)


def summary(done: Bundled) -> str:
    manifest = done.manifest
    key = done.key
    state = "up to date (nothing rewritten)" if done.up_to_date else "written"
    lines = [
        f"bundle     {done.bundle} ({state})",
        f"version    {manifest.version} (revision {manifest.source_revision})",
        f"build id   {manifest.build_id}",
        f"key        {key.keyid} ({key.key_class}: {key.source})",
        f"expires    {datetime.fromtimestamp(manifest.expires_epoch, UTC):%Y-%m-%dT%H:%M:%SZ}",
        f"report     {done.bundle / REPORT_PAGE} (open it in a browser)",
    ]
    digests = dict(manifest.listed_files())
    for url, lane in manifest.lanes():
        lines.append(f"  {lane:<26} sha256 {digests[url][:16]}  {url}")
    if key.key_class == "development":
        lines.append("signed with the DEVELOPMENT key: verifiers refuse it without --allow-dev-key")
    lines.append(f"verify it:  {verify_command(done)}")
    return "\n".join(lines)


def release_result(done: Bundled) -> dict[str, object]:
    """What `release --json` says: the bundle, what it holds and how to verify it."""
    manifest = done.manifest
    digests = dict(manifest.listed_files())
    return {
        "bundle": str(done.bundle),
        "report": str(done.bundle / REPORT_PAGE),
        "up_to_date": done.up_to_date,
        "version": manifest.version,
        "source_revision": manifest.source_revision,
        "build_id": manifest.build_id,
        "keyid": done.key.keyid,
        "key_class": done.key.key_class,
        "expires_epoch": manifest.expires_epoch,
        "lanes": {lane: {"url": url, "sha256": digests[url]} for url, lane in manifest.lanes()},
        "verify_command": verify_command(done),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--key",
        type=Path,
        default=None,
        help="Ed25519 private key PEM (default: $TINYRUSTLM_RELEASE_KEY, "
        "else the development key in .dev-keys/)",
    )
    parser.add_argument(
        "--key-class",
        choices=["release", "development"],
        default="release",
        help="class recorded for --key/$TINYRUSTLM_RELEASE_KEY (default release)",
    )
    parser.add_argument(
        "--keyless",
        action="store_true",
        help="also sign manifest.json with Sigstore keyless from the CI job's ambient OIDC "
        "credential (as `sign --keyless` does, after the bundle is written)",
    )
    parser.add_argument(
        "--lane",
        action="append",
        dest="lanes",
        metavar="ID",
        help="release only these lanes (repeatable; default: all)",
    )
    parser.add_argument("--dist", type=Path, default=Path("dist"), help="output folder")
    parser.add_argument(
        "--force", action="store_true", help="replace an existing bundle of the same version"
    )
    parser.add_argument("--rebuild", action="store_true", help="ignore the build cache")
    parser.add_argument(
        "--conformance",
        action="store_true",
        help="run the conformance matrix on every engine (browsers, node, wasmtime, native, "
        "qemu, wine); without it every release runs node over every lane and tier",
    )
    parser.add_argument(
        "--no-conformance",
        action="store_true",
        help="ship no conformance.json (local trials: a release's bundle carries the matrix)",
    )
    parser.add_argument(
        "--conformance-cases",
        type=at_least_one("a conformance run needs at least 1 case"),
        default=100,
        metavar="N",
        help="cases (default 100, at least 1)",
    )
    parser.add_argument(
        "--conformance-require",
        default="",
        metavar="ENGINES",
        help="stop unless each of these engines has passing and no failing rows",
    )
    parser.add_argument(
        "--disable-lane",
        action="append",
        default=[],
        dest="disabled_lanes",
        metavar="ID",
        help="switch this wasm lane off in the signed manifest (repeatable; no rebuild needed)",
    )
    parser.add_argument(
        "--ship-unsmoked",
        action="append",
        default=[],
        dest="unsmoked_lanes",
        metavar="ID",
        help="ship this lane although its self-test did not run on this machine (repeatable; "
        "the signed manifest records it in unsmoked_lanes)",
    )
    parser.add_argument(
        "--from-records",
        nargs="+",
        action="append",
        type=Path,
        default=None,
        metavar="DIR",
        help="assemble from lanes built elsewhere (`build --lane X --records-out DIR`) "
        "instead of building here; give every folder after one --from-records",
    )
    parser.add_argument(
        "--previous",
        type=Path,
        default=None,
        metavar="BUNDLE_DIR",
        help="an earlier release's bundle folder: report.html shows what changed since it "
        "(its manifest, report and SBOM ride in the bundle under previous/)",
    )
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="release from a tree with uncommitted changes (local trials only)",
    )


def run(args: argparse.Namespace) -> Outcome:
    if args.from_records and len(args.from_records) > 1:  # never keep only the last one
        raise ReleaseUsage(
            f"--from-records given {len(args.from_records)} times",
            where="--from-records",
        )
    repo_root = Path.cwd()
    request = ReleaseRequest(
        repo_root=repo_root,
        dist=args.dist if args.dist.is_absolute() else repo_root / args.dist,
        lanes=tuple(args.lanes) if args.lanes else None,
        force=args.force,
        rebuild=args.rebuild,
        allow_dirty=args.allow_dirty,
        key_path=args.key,
        key_class=args.key_class,
        disabled_lanes=tuple(args.disabled_lanes),
        unsmoked_lanes=tuple(args.unsmoked_lanes),
        previous=args.previous,
    )
    steps = STEPS
    if args.from_records:
        steps = replace(steps, build=build_from_records(args.from_records[0]))
    require: list[str] = []
    if args.conformance_require:  # checked before anything runs, not after the matrix
        require = engine_names(args.conformance_require, ALL_ENGINES, "--conformance-require")
    if args.no_conformance:
        if args.conformance or require:
            raise UsageError(
                "--no-conformance with --conformance or --conformance-require",
                where="--no-conformance",
                hint="choose one: no matrix, or the matrix on the engines asked for",
            )
        steps = replace(steps, conformance=skip_conformance)
    elif args.conformance or require:
        options = Options(cases=args.conformance_cases)
        steps = replace(steps, conformance=run_conformance(options, require))
    else:
        cases = args.conformance_cases
        steps = replace(steps, conformance=lambda signed: release_matrix(signed, cases))
    if args.keyless:
        ambient_token()  # no credential: stop before building anything
    with progress_bar(args, "release") as bar:
        done = run_release(request, steps, step_lines(print, bar))
    if args.keyless:
        cosign_bundle(done.bundle, None, keyless=True, trust=own_trust(done))
    print(summary(done))
    return Outcome(EXIT_OK, release_result(done))
