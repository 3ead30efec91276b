"""`tinyrustlm-verify artifact FILE --lane ID [--json]`, or every lane of a build:
`tinyrustlm-verify artifact --build-index build/index.json [--json]`.

Exit codes: 0 every check passed, 1 at least one finding, 3 unreadable or malformed input.
With --json (the shell's flag), stdout is JSON in every case: the verification report, or
(when no report could be made: an unreadable or malformed file, a bad build index) a refusal
naming the error id.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from verify.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, VerifyError
from verify.inputs import read_json_file
from verify.shell.result import Outcome
from verify.shell.terminal import print_diagnostics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, nargs="?", help="a final binary (.wasm, ELF or PE)")
    parser.add_argument("--lane", help="the lane FILE claims to be (a lane of the policy)")
    parser.add_argument(
        "--build-index",
        type=Path,
        default=None,
        help="inspect every lane of a build index (build/index.json)",
    )
    parser.add_argument(
        "--policy-dir",
        type=Path,
        default=None,
        help="folder with wasm.json and native.json (default: repo's)",
    )
    parser.add_argument(
        "--no-wasm-tools", action="store_true", help="skip the wasm-tools validate cross-check"
    )


class ArtifactUsage(VerifyError):
    """`artifact` given neither or both of FILE --lane and --build-index."""

    exit_code = EXIT_USAGE
    error_id = "artifact.usage"
    default_hint = "give FILE --lane ID for one artifact, or --build-index build/index.json"


class BuildIndexInvalid(VerifyError):
    """A build index without a `lanes` list of {artifact, lane} rows, or with none."""

    error_id = "artifact.build-index"
    default_hint = "give the build/index.json that `tinyrustlm-release build` wrote"


def artifacts_of_index(index: Path) -> list[tuple[Path, str]]:
    """(artifact, lane) for each lane of a build index; relative paths are from the repo
    root, the folder that holds build/."""
    doc = read_json_file(index, "build-index")
    try:
        rows = [(str(row["artifact"]), str(row["lane"])) for row in doc["lanes"]]
    except (KeyError, TypeError) as exc:
        raise BuildIndexInvalid(f"malformed build index: {exc}", where=str(index)) from None
    root = index.resolve().parent.parent
    return [(p if (p := Path(a)).is_absolute() else root / p, lane) for a, lane in rows]


# What `artifact --json` prints when the input is refused before any report exists.
REFUSAL_SCHEMA = "tinyrustlm.artifact-refusal.v1"


def refusal(exc: VerifyError) -> dict[str, Any]:
    """The --json document for a refused input: the error's id, message, place, exit code."""
    return {
        "schema": REFUSAL_SCHEMA,
        "ok": False,
        "error": {
            "id": exc.error_id,
            "message": exc.message,
            "where": exc.where,
            "offset": exc.offset,
            "exit_code": exc.exit_code,
        },
    }


def run(args: argparse.Namespace) -> Outcome:
    if not args.json:
        return _run(args)
    try:
        return _run(args)
    except VerifyError as exc:  # still JSON on stdout; the diagnostics go to stderr
        print_diagnostics(exc.diagnostics())
        return Outcome(exc.exit_code, document=json.dumps(refusal(exc), indent=2, sort_keys=True))


def _run(args: argparse.Namespace) -> Outcome:
    if args.build_index is not None:
        if args.file is not None or args.lane is not None:
            raise ArtifactUsage("give either FILE --lane ID or --build-index, not both")
        items = artifacts_of_index(args.build_index)
        if not items:
            raise BuildIndexInvalid("the build index lists no lanes", where=str(args.build_index))
    elif args.file is None or args.lane is None:
        raise ArtifactUsage("FILE and --lane are required (or use --build-index)")
    else:
        items = [(args.file, args.lane)]
    # Imported here: lief and capstone cost a second of start-up that other commands skip.
    from verify.inspect import render_table, verification_report

    report = verification_report(items, args.policy_dir, cross_check=not args.no_wasm_tools)
    print(render_table(report))  # with --json, the shell prints the document instead
    code = EXIT_OK if report.ok else EXIT_FINDINGS
    return Outcome(code, document=report.model_dump_json(by_alias=True, indent=2))
