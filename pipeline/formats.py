"""`tinyrustlm-release schemas [--out DIR]`: every versioned format's JSON Schema.

One table: verify's formats plus the pipeline's own (lanes, toolchain seed and lock, build
records and index). A test keeps manifests/schemas/ equal to what this writes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import BaseModel

from pipeline.bench.document import BENCH_SCHEMA, BenchDocument
from pipeline.bench.wasm_parser import ParserBench
from pipeline.errors import EXIT_OK
from pipeline.fetch.state import FETCH_STATE_SCHEMA, FetchState
from pipeline.io.atomic import write_atomic
from pipeline.lanebuild.records import BuildIndex, BuildRecord
from pipeline.lanebuild.smoke_plan import SCHEMA as SMOKE_PLAN_SCHEMA
from pipeline.lanebuild.smoke_plan import NativeSmokePlan
from pipeline.toolchain.lockfile import LOCK_SCHEMA, SEED_SCHEMA, ToolchainLock, ToolchainSeed
from pipeline.tree.lanes import LanesFile
from verify.formats.registry import VERIFY_FORMATS, schema_json
from verify.shell.result import Outcome

FORMATS: dict[str, type[BaseModel]] = {
    **VERIFY_FORMATS,
    "tinyrustlm.bench-parser.v1": ParserBench,
    "tinyrustlm.lanes.v1": LanesFile,
    SEED_SCHEMA: ToolchainSeed,
    LOCK_SCHEMA: ToolchainLock,
    "tinyrustlm.build-record.v1": BuildRecord,
    "tinyrustlm.build-index.v1": BuildIndex,
    FETCH_STATE_SCHEMA: FetchState,
    BENCH_SCHEMA: BenchDocument,
    SMOKE_PLAN_SCHEMA: NativeSmokePlan,
}
SCHEMAS_DIR = Path("manifests/schemas")


def write_schemas(folder: Path) -> list[Path]:
    written = []
    for name, model in FORMATS.items():
        path = folder / f"{name}.json"
        write_atomic(path, schema_json(model).encode())
        written.append(path)
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", type=Path, default=SCHEMAS_DIR, help=f"schema folder (default: {SCHEMAS_DIR})"
    )


def run(args: argparse.Namespace) -> Outcome:
    written = write_schemas(args.out)
    for path in written:
        print(path)
    return Outcome(EXIT_OK, {"written": [str(p) for p in written]})
