"""`tinyrustlm-release fetch URL --root ROOT_JSON [--version V | --latest] --out DIR ...`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pipeline.errors import EXIT_OK
from pipeline.fetch.client import FetchRequest, fetch_release
from pipeline.tuf.policy import load_policy
from verify.shell.arguments import add_trust_arguments
from verify.shell.progress import progress_bar
from verify.shell.result import Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="repository base URL (serving metadata/ and targets/)")
    parser.add_argument(
        "--root", type=Path, required=True, metavar="ROOT_JSON", help="trusted TUF root metadata"
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--version", help="the release to fetch")
    which.add_argument("--latest", action="store_true", help="the newest published release")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    add_trust_arguments(parser, "the fetched bundle must verify against it")
    parser.add_argument(
        "--state",
        type=Path,
        default=None,
        metavar="DIR",
        help=(
            "client state folder: trusted metadata and the newest version fetched "
            "(default: a per-user state folder keyed by the URL)"
        ),
    )
    parser.add_argument(
        "--allow-downgrade",
        action="store_true",
        help="accept a release older than the newest already fetched",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing output folder")


def run(args: argparse.Namespace) -> Outcome:
    start = time.monotonic()
    request = FetchRequest(
        url=args.url,
        root=args.root,
        out=args.out,
        trusted_keys=args.trusted_keys,
        version=args.version,
        allow_dev_key=args.allow_dev_key,
        allow_downgrade=args.allow_downgrade,
        state=args.state,
        force=args.force,
    )
    with progress_bar(args, "fetch") as bar:
        done = fetch_release(request, load_policy(), now=int(time.time()), say=print, progress=bar)
    v = done.verdict
    result = {
        "bundle": str(done.bundle),
        "up_to_date": done.up_to_date,
        "version": v.version,
        "build_id": v.build_id,
        "keyid": v.keyid,
        "key_class": v.key_class,
        "files": v.files,
    }
    if done.up_to_date:
        print(
            f"up to date tinyrustlm {v.version}, build {v.build_id} (verified, nothing downloaded)"
        )
        print(f"bundle     {done.bundle}")
        return Outcome(EXIT_OK, result)
    print(
        f"verified   tinyrustlm {v.version}, build id {v.build_id}, key {v.keyid} "
        f"({v.key_class}), {v.files} files"
    )
    print(f"bundle     {done.bundle}  ({time.monotonic() - start:.2f}s)")
    return Outcome(EXIT_OK, result)
