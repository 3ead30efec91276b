"""`tinyrustlm-release publish BUNDLE --repo DIR --keys DIR --trusted-keys FILE`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pipeline.errors import EXIT_OK
from pipeline.publish.cli_common import add_repo_arguments, key_folders, print_summary
from pipeline.publish.publish import publish_bundle
from pipeline.tuf.errors import TrustedKeysUnreadable
from pipeline.tuf.policy import load_policy
from verify.bundle.trusted_keys import load_trusted_keys
from verify.errors import VerifyError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="bundle folder dist/tinyrustlm-<version>/")
    add_repo_arguments(parser)
    parser.add_argument(
        "--trusted-keys",
        type=Path,
        required=True,
        metavar="FILE",
        help="trusted-keys JSON the bundle must verify against",
    )
    parser.add_argument(
        "--allow-dev-key", action="store_true", help="accept a development-key bundle"
    )


def run(args: argparse.Namespace) -> int:
    start = time.monotonic()
    try:
        trusted = load_trusted_keys(args.trusted_keys)
    except VerifyError as exc:
        raise TrustedKeysUnreadable(exc.message, where=exc.where) from exc
    done = publish_bundle(
        args.bundle,
        args.repo,
        key_folders(args),
        trusted,
        load_policy(overrides=args.expiry),
        allow_dev_key=args.allow_dev_key,
    )
    print_summary(done.repo)
    print(
        f"published  tinyrustlm {done.version} (build {done.build_id}), {done.files} files"
        f" (previous: {done.previous or 'none'}) in {time.monotonic() - start:.1f}s"
    )
    return EXIT_OK
