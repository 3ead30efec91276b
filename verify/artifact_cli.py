"""`tinyrustlm-verify artifact FILE --lane ID [--json]`.

Exit codes: 0 every check passed, 1 at least one finding, 3 unreadable or malformed input.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from verify.errors import EXIT_FINDINGS, EXIT_OK
from verify.inspect import LANES, render_table, verification_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, help="a final binary (.wasm, ELF or PE)")
    parser.add_argument("--lane", required=True, choices=LANES, help="the lane it claims")
    parser.add_argument("--json", action="store_true", help="print the verification report")
    parser.add_argument("--policy-dir", type=Path, default=None,
                        help="folder with wasm.json and native.json (default: repo's)")  # fmt: skip
    parser.add_argument("--no-wasm-tools", action="store_true",
                        help="skip the wasm-tools validate cross-check")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    report = verification_report(
        [(args.file, args.lane)], args.policy_dir, cross_check=not args.no_wasm_tools
    )
    if args.json:
        print(report.model_dump_json(by_alias=True, indent=2))
    else:
        print(render_table(report))
    return EXIT_OK if report.ok else EXIT_FINDINGS
