"""`tinyrustlm-release repo init|refresh-timestamp|rotate-root|rotate ROLE|delegate|sign-pending
--repo DIR --keys DIR`."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.errors import EXIT_OK
from pipeline.publish.cli_common import (
    add_repo_arguments,
    key_folders,
    print_summary,
    summary_result,
)
from pipeline.publish.delegation import (
    RELEASES_ROLE,
    delegate_releases,
    rotate_releases,
    sign_pending,
)
from pipeline.publish.pending import PendingTrust
from pipeline.publish.repo import (
    ROTATABLE_ROLES,
    init_repository,
    refresh_timestamp,
    rotate_role,
    rotate_root,
)
from pipeline.tuf.errors import TrustedKeysUnreadable
from pipeline.tuf.policy import load_policy
from verify.bundle.trusted_keys import load_trust_root
from verify.errors import VerifyError
from verify.shell.arguments import add_trust_arguments
from verify.shell.result import Outcome


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
    roles = (*ROTATABLE_ROLES, RELEASES_ROLE)
    rotate_any = actions.add_parser(
        "rotate",
        help=f"new key for ROLE ({', '.join(roles)}); recovers clients from a "
        "fast-forward made with the old key",
        description=f"Give ROLE ({', '.join(roles)}) a new key. For {RELEASES_ROLE}: the "
        "new maintainers' keys and threshold (--maintainer, --threshold, --maintainer-key).",
    )
    rotate_any.add_argument(
        "role",
        choices=roles,
        metavar="ROLE",
        help=f"the role whose key is replaced: one of {', '.join(roles)}",
    )
    add_repo_arguments(rotate_any)
    rotate_any.add_argument(
        "--maintainer",
        type=Path,
        action="append",
        default=[],
        metavar="PUB.pem",
        help="releases: a new maintainer's public key (repeatable)",
    )
    rotate_any.add_argument(
        "--threshold", type=int, default=0, metavar="K", help="releases: the new threshold"
    )
    rotate_any.add_argument(
        "--current-maintainer-key",
        type=Path,
        action="append",
        default=[],
        metavar="PEM",
        help="releases: a CURRENT maintainer's private key allowing the change (their "
        "threshold; repeatable), unless the offline root key is given with --root-keys",
    )
    rotate_any.add_argument(
        "--maintainer-key",
        type=Path,
        action="append",
        default=[],
        metavar="PEM",
        help="releases: a new maintainer's private key (K of them sign at once; repeatable)",
    )
    delegate = actions.add_parser(
        "delegate",
        help="targets delegates the releases to the maintainers' keys with a threshold",
    )
    add_repo_arguments(delegate)
    delegate.add_argument(
        "--maintainer",
        type=Path,
        action="append",
        required=True,
        metavar="PUB.pem",
        help="a maintainer's Ed25519 public key (`keygen` NAME.pub.pem; repeatable)",
    )
    delegate.add_argument(
        "--threshold", type=int, required=True, metavar="K", help="distinct maintainers needed"
    )
    pending = actions.add_parser(
        "sign-pending", help="co-sign the release waiting for maintainer signatures"
    )
    add_repo_arguments(pending)
    pending.add_argument(
        "--maintainer-key", type=Path, required=True, metavar="PEM", help="your private key"
    )
    add_trust_arguments(pending, "the pending bundle must verify against it before you sign")
    pending.add_argument(
        "--expect-digest",
        default=None,
        metavar="SHA256",
        help="the sha256 of the reviewed bundle's manifest.json; without it nothing is signed "
        "and the pending version, build id and digest are shown",
    )


def run(args: argparse.Namespace) -> Outcome:
    policy = load_policy(overrides=args.expiry)
    folders = key_folders(args)
    result: dict[str, object] = {"action": args.action}
    if args.action == "init":
        summary = init_repository(args.repo, folders, policy, args.role)
        print_summary(summary)
        if args.role == "development":
            print("DEVELOPMENT keys: fine for trials, never for a repository others rely on")
        print(f"root key   {folders.folder('root')}  (keep it offline)")
        print(f"trust root {args.repo / 'metadata' / '1.root.json'}  (give it to clients)")
        result["root_key"] = str(folders.folder("root"))
        result["trust_root"] = str(args.repo / "metadata" / "1.root.json")
    elif args.action == "refresh-timestamp":
        summary = refresh_timestamp(args.repo, folders, policy)
        print_summary(summary)
    elif args.action == "rotate" and args.role == RELEASES_ROLE:
        summary = rotate_releases(
            args.repo,
            folders,
            policy,
            args.maintainer,
            args.threshold,
            args.maintainer_key,
            current_keys=args.current_maintainer_key,
        )
        print_summary(summary)
        print(f"rotated    releases: {args.threshold} of {len(args.maintainer)} new keys")
        result.update(role=RELEASES_ROLE, threshold=args.threshold, keys=len(args.maintainer))
    elif args.action == "delegate":
        summary = delegate_releases(args.repo, folders, policy, args.maintainer, args.threshold)
        print_summary(summary)
        print(
            f"delegated  {policy.target_prefix}/* to releases: {args.threshold} of "
            f"{len(args.maintainer)} maintainer keys"
        )
        result.update(threshold=args.threshold, keys=len(args.maintainer))
    elif args.action == "sign-pending":
        try:
            trusted = load_trust_root(args.trusted_keys)
        except VerifyError as exc:
            raise TrustedKeysUnreadable(exc.message, where=exc.where) from exc
        trust = PendingTrust(trusted, allow_dev_key=args.allow_dev_key)
        done = sign_pending(
            args.repo,
            folders,
            policy,
            args.maintainer_key,
            trust=trust,
            expect_digest=args.expect_digest,
        )
        if done.release is not None:
            release = done.release
            print(
                f"co-signed  tinyrustlm {release.version} (build {release.build_id}), "
                f"manifest.json sha256 {release.manifest_sha256}"
            )
        state = "published" if done.committed else "still pending"
        print(
            f"releases v{done.version}: {len(done.signed_by)} of {done.threshold} "
            f"signatures, {state}"
        )
        result["pending"] = {
            "version": done.version,
            "signed_by": list(done.signed_by),
            "threshold": done.threshold,
            "committed": done.committed,
        }
        return Outcome(EXIT_OK, result)
    elif args.action == "rotate":
        summary = rotate_role(args.repo, folders, policy, args.role)
        print_summary(summary)
        print(f"rotated    {args.role}: root and the metadata it signs were re-signed")
        result["role"] = args.role
    else:
        summary = rotate_root(args.repo, folders, policy)
        print_summary(summary)
        newest_root = f"{summary.versions['root']}.root.json"
        print(f"new root   {args.repo / 'metadata' / newest_root}")
        result["new_root"] = str(args.repo / "metadata" / newest_root)
    return Outcome(EXIT_OK, {**result, "repository": summary_result(summary)})
