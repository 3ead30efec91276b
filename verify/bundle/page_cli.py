"""`tinyrustlm-verify report BUNDLE --out FILE [--previous OLD_BUNDLE] [bundle's options]`:
write the bundle's report page, with what this verifier established.

The bundle is verified first, every step of `tinyrustlm-verify bundle` with the same options
(an unverified bundle gets no page: the refusal is the same as `bundle`'s). The page is the
one the bundle ships (report.html, re-derived from its verified documents) plus this
verifier's view: the signers it counted against its trust policy's threshold, each step's
verdict and when. With --previous, the diff is against that bundle instead of the previous
release the bundle carries; it is verified with the same trust policy as of the new
release's SOURCE_DATE_EPOCH (an earlier release may have expired since) and must come before
it. The page is written atomically.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from verify.bundle import cli as bundle_cli
from verify.bundle.layout import MANIFEST, REPORT, SBOM
from verify.bundle.page.inputs import PREVIOUS_DIR, page_inputs, release_of
from verify.bundle.page.page import VerifiedView, render_page
from verify.bundle.page.previous import check_previous
from verify.bundle.step_titles import STEP_TITLES
from verify.bundle.verifier import BundleVerifier, Requirements, StepResult
from verify.errors import EXIT_OK, IoFailed
from verify.shell.result import Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    bundle_cli.add_arguments(parser)
    parser.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="where to write the page (HTML)"
    )
    parser.add_argument(
        "--previous",
        type=Path,
        default=None,
        metavar="OLD_BUNDLE",
        help="diff against this earlier release (verified too) instead of the one the bundle "
        "carries",
    )


def write_atomically(path: Path, data: bytes) -> None:
    """`path` holds either its old bytes or all of `data`, never a part."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        tmp.chmod(0o644)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def run(args: argparse.Namespace) -> Outcome:
    now = int(time.time()) if args.at_epoch is None else args.at_epoch
    root, requires = bundle_cli.prepared(args, now)
    verifier = BundleVerifier(root)
    verdict = verifier.verify(args.bundle, requires, _say)
    current = release_of(verdict.contents)
    previous = None
    if args.previous is not None:
        then = Requirements(
            now=current.manifest.source_date_epoch, allow_dev_key=args.allow_dev_key
        )
        old = verifier.verify(args.previous, then)
        files = {f"{PREVIOUS_DIR}/{n}": old.contents[n] for n in (MANIFEST, REPORT, SBOM)}
        previous = release_of(files, f"{PREVIOUS_DIR}/")
        check_previous(previous, current, str(args.previous))
    view = VerifiedView(
        at_epoch=now,
        signers=tuple(zip(verdict.keyids, verdict.roles, strict=True)),
        threshold=root.rule("manifest").threshold,
        steps=tuple((s.number, s.title, s.detail) for s in verdict.steps),
    )
    page = render_page(page_inputs(verdict.contents, previous), verdict.contents, view)
    try:
        write_atomically(args.out, page)
    except OSError as exc:
        raise IoFailed.of(exc) from exc
    print(f"report: {args.out} ({len(page):,} bytes) for tinyrustlm {verdict.version}")
    return Outcome(
        EXIT_OK, {"report": str(args.out), "bytes": len(page), "version": verdict.version}
    )


def _say(result: StepResult) -> None:
    print(
        f"[{result.number:>2}/{len(STEP_TITLES)}] {result.title}: ok ({result.detail})", flush=True
    )
