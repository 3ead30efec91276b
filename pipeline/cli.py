"""`tinyrustlm-release`: the maintainers' command line."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.errors import PipelineError
from verify.cmdline import dispatch

# name -> (module with add_arguments/run, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "toolchain": ("pipeline.toolchain.cli", "install, check or re-lock the pinned Rust toolchain"),
    "pack-model": ("pipeline.modelpack", "write a deterministic v1 model (tiny, small, bench)"),
    "build": ("pipeline.lanebuild.cli", "build lanes with the pinned toolchain into build/"),
    "golden": ("pipeline.golden", "regenerate tests/golden/ from the native scalar oracle"),
    "keygen": ("pipeline.keys", "create an Ed25519 release key pair"),
    "release": ("pipeline.release", "toolchain check, build, verify, smoke, sign, bundle to dist/"),
    "bench": ("pipeline.bench", "lane benchmarks side by side; JSON under build/bench/"),
    "reproduce": ("pipeline.reproduce", "rebuild a bundle's revision and compare byte for byte"),
}


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch(
        "tinyrustlm-release",
        "Build, verify, sign and release tinyrustlm.",
        COMMANDS,
        argv,
        PipelineError,
    )


if __name__ == "__main__":
    raise SystemExit(main())
