"""`tinyrustlm-release publish BUNDLE --repo DIR --keys DIR --trusted-keys FILE`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pipeline.errors import EXIT_OK
from pipeline.publish.cli_common import (
    add_repo_arguments,
    key_folders,
    print_summary,
    summary_result,
)
from pipeline.publish.publish import publish_bundle
from pipeline.tuf.errors import TrustedKeysUnreadable
from pipeline.tuf.policy import load_policy
from verify.bundle.trusted_keys import load_trust_root
from verify.errors import VerifyError
from verify.shell.arguments import add_trust_arguments
from verify.shell.result import Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="bundle folder dist/tinyrustlm-<version>/")
    add_repo_arguments(parser)
    add_trust_arguments(parser, "the bundle must verify against it before it is published")
    parser.add_argument(
        "--maintainer-key",
        type=Path,
        default=None,
        metavar="PEM",
        help="your key, when the repository delegates releases to the maintainers "
        "(`repo delegate`): signs the release, served once the threshold co-signed",
    )


def run(args: argparse.Namespace) -> Outcome:
    start = time.monotonic()
    try:
        trusted = load_trust_root(args.trusted_keys)
    except VerifyError as exc:
        raise TrustedKeysUnreadable(exc.message, where=exc.where) from exc
    done = publish_bundle(
        args.bundle,
        args.repo,
        key_folders(args),
        trusted,
        load_policy(overrides=args.expiry),
        allow_dev_key=args.allow_dev_key,
        maintainer_key=args.maintainer_key,
    )
    print_summary(done.repo)
    if done.pending is not None and not done.pending.committed:
        print(
            f"PENDING    {len(done.pending.signed_by)} of {done.pending.threshold} maintainer "
            "signatures: not served until `repo sign-pending` meets the threshold"
        )
    print(
        f"published  tinyrustlm {done.version} (build {done.build_id}), {done.files} files"
        f" (previous: {done.previous or 'none'}) in {time.monotonic() - start:.1f}s"
    )
    pending = done.pending
    return Outcome(
        EXIT_OK,
        {
            "version": done.version,
            "build_id": done.build_id,
            "files": done.files,
            "previous": done.previous,
            "pending": None
            if pending is None
            else {
                "signed_by": list(pending.signed_by),
                "threshold": pending.threshold,
                "committed": pending.committed,
            },
            "repository": summary_result(done.repo),
        },
    )
