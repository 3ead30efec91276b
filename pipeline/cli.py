# PYTHON_ARGCOMPLETE_OK  (argcomplete's global completion looks for this line: README)
"""`tinyrustlm-release`: the maintainers' command line.

Each command is a module with `add_arguments(parser)` and `run(args)`; the shell it shares with
`tinyrustlm-verify` (`verify.shell`) parses, runs and prints: the one error root
(`PipelineError`, or a verifier refusal no step wrapped) is caught there, once, and printed as
its `diagnostics()` (and with --json as an error object).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline import formats, golden, modelpack, reproduce, serve
from pipeline.bench import cli as bench_cli
from pipeline.conformance import cli as conformance_cli
from pipeline.documents import keys, trust_policy
from pipeline.errors import PipelineError
from pipeline.fetch import cli as fetch_cli
from pipeline.lanebuild import cli as build_cli
from pipeline.lanebuild import job_matrix, smoke_plan
from pipeline.publish import cli_publish, cli_repo
from pipeline.release import cli as release_cli
from pipeline.release import cosign
from pipeline.toolchain import cli as toolchain_cli
from verify.errors import VerifyError
from verify.shell.commands import CommandModule, Shell

# name -> (module with add_arguments/run, one-line help)
COMMANDS: dict[str, tuple[CommandModule, str]] = {
    "toolchain": (toolchain_cli, "install, check or re-lock the pinned Rust toolchain"),
    "pack-model": (modelpack, "write a deterministic v1 model (tiny, small, bench)"),
    "build": (build_cli, "build lanes with the pinned toolchain into build/"),
    "lanes": (job_matrix, "print release.yml's lane matrices (JSON) from manifests/lanes.toml"),
    "smoke-plan": (smoke_plan, "plan a lane's smoke run on its native hardware (CI)"),
    "golden": (golden, "regenerate tests/golden/ from the native scalar oracle"),
    "keygen": (keys, "create an Ed25519 release key pair"),
    "trust-policy": (trust_policy, "a trusted-keys v2 file: maintainers' keys and a threshold"),
    "release": (release_cli, "toolchain check, build, verify, smoke, sign, bundle to dist/"),
    "bench": (
        bench_cli,
        "lane benchmarks side by side (node, native, Chromium through js/loader.js); JSON "
        "under build/bench/",
    ),
    "sign": (cosign, "co-sign an existing bundle with another maintainer's key"),
    "reproduce": (reproduce, "rebuild a bundle's revision and compare byte for byte"),
    "schemas": (formats, "write the JSON Schema of every versioned format"),
    "repo": (cli_repo, "TUF repository: init, refresh-timestamp, rotate-root"),
    "publish": (cli_publish, "add a verified bundle to the TUF repository"),
    "fetch": (fetch_cli, "fetch a release through TUF, then verify it"),
    "serve": (serve, "serve a bundle and the example page on 127.0.0.1"),
    "conformance": (conformance_cli, "every lane on every engine vs the native oracle"),
}


SHELL = Shell(
    prog="tinyrustlm-release",
    description="Build, verify, sign and release tinyrustlm.",
    commands=COMMANDS,
    package_dir=Path(__file__).parent,
    distributions=("tinyrustlm-release",),
    errors=(PipelineError, VerifyError),  # a verifier refusal no step wrapped: its id
)
parser = SHELL.parser


def main(argv: Sequence[str] | None = None) -> int:
    return SHELL.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
