"""`tinyrustlm-release`: the maintainers' command line.

Each command is a module with `add_arguments(parser)` and `run(args) -> int`; the one error
root (`PipelineError`) is caught here, once, and printed as its `diagnostics()`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from pipeline import formats, golden, modelpack, reproduce, serve
from pipeline.bench import cli as bench_cli
from pipeline.conformance import cli as conformance_cli
from pipeline.documents import keys
from pipeline.documents import trust_policy as policy
from pipeline.errors import EXIT_ERROR, PipelineError
from pipeline.fetch import cli as fetch_cli
from pipeline.lanebuild import cli as build_cli
from pipeline.lanebuild import job_matrix as matrix
from pipeline.lanebuild import smoke_plan
from pipeline.publish import cli_publish, cli_repo
from pipeline.release import cli as release_cli
from pipeline.release import cosign
from pipeline.toolchain import cli as toolchain_cli
from verify.errors import IoFailed, VerifyError
from verify.version import add_version_argument

# name -> (module with add_arguments/run, one-line help)
COMMANDS: dict[str, tuple[ModuleType, str]] = {
    "toolchain": (toolchain_cli, "install, check or re-lock the pinned Rust toolchain"),
    "pack-model": (modelpack, "write a deterministic v1 model (tiny, small, bench)"),
    "build": (build_cli, "build lanes with the pinned toolchain into build/"),
    "lanes": (matrix, "print release.yml's lane matrices (JSON) from manifests/lanes.toml"),
    "smoke-plan": (smoke_plan, "plan a lane's smoke run on its native hardware (CI)"),
    "golden": (golden, "regenerate tests/golden/ from the native scalar oracle"),
    "keygen": (keys, "create an Ed25519 release key pair"),
    "trust-policy": (policy, "a trusted-keys v2 file: maintainers' keys and a threshold"),
    "release": (release_cli, "toolchain check, build, verify, smoke, sign, bundle to dist/"),
    "bench": (bench_cli, "lane benchmarks side by side; JSON under build/bench/"),
    "sign": (cosign, "co-sign an existing bundle with another maintainer's key"),
    "reproduce": (reproduce, "rebuild a bundle's revision and compare byte for byte"),
    "schemas": (formats, "write the JSON Schema of every versioned format"),
    "repo": (cli_repo, "TUF repository: init, refresh-timestamp, rotate-root"),
    "publish": (cli_publish, "add a verified bundle to the TUF repository"),
    "fetch": (fetch_cli, "fetch a release through TUF, then verify it"),
    "serve": (serve, "serve a bundle and the example page on 127.0.0.1"),
    "conformance": (conformance_cli, "every lane on every engine vs the native oracle"),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="tinyrustlm-release", description="Build, verify, sign and release tinyrustlm."
    )
    add_version_argument(top, Path(__file__).parent, ("tinyrustlm-release",))
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except (PipelineError, VerifyError) as exc:  # a verifier refusal no step wrapped: its id
        print(exc.diagnostics(), file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # a file vanished or is unreadable: still one clear line, exit 3
        print(IoFailed.of(exc).diagnostics(), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("tinyrustlm-release: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    raise SystemExit(main())
