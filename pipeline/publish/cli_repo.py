"""`tinyrustlm-release repo init|refresh-timestamp|rotate-root --repo DIR --keys DIR`."""

from __future__ import annotations

import argparse

from pipeline.errors import EXIT_OK
from pipeline.publish.cli_common import add_repo_arguments, key_folders, print_summary
from pipeline.publish.repo import init_repository, refresh_timestamp, rotate_root
from pipeline.tuf.policy import load_policy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser("init", help="create the repository and its keys")
    add_repo_arguments(init)
    init.add_argument(
        "--role",
        choices=["development", "release"],
        default="development",
        help="label of the new keys (default: development; say `release` for real ones)",
    )
    refresh = actions.add_parser(
        "refresh-timestamp", help="re-sign snapshot and timestamp (nothing new published)"
    )
    add_repo_arguments(refresh)
    rotate = actions.add_parser(
        "rotate-root", help="new root key; the new root is signed by the old and the new key"
    )
    add_repo_arguments(rotate)


def run(args: argparse.Namespace) -> int:
    policy = load_policy(overrides=args.expiry)
    folders = key_folders(args)
    if args.action == "init":
        summary = init_repository(args.repo, folders, policy, args.role)
        print_summary(summary)
        if args.role == "development":
            print("DEVELOPMENT keys: fine for trials, never for a repository others rely on")
        print(f"root key   {folders.folder('root')}  (keep it offline)")
        print(f"trust root {args.repo / 'metadata' / '1.root.json'}  (give it to clients)")
    elif args.action == "refresh-timestamp":
        print_summary(refresh_timestamp(args.repo, folders, policy))
    else:
        summary = rotate_root(args.repo, folders, policy)
        print_summary(summary)
        newest_root = f"{summary.versions['root']}.root.json"
        print(f"new root   {args.repo / 'metadata' / newest_root}")
    return EXIT_OK
