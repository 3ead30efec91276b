"""`tinyrustlm-release smoke-plan`: what a native runner checks about one lane's artifact.

An emulated smoke run (qemu, wine) proves little about the hardware the artifact is for, so
release.yml runs the artifact again on that hardware (`native_runner` in lanes.toml). The plan
is made here, where the whole pipeline is installed; the runner executes it with
`python -m pipeline.lanebuild.native_smoke` (standard library only: a Windows or arm64 runner
needs no lock install). It holds:

- the artifact (its path in the records folder and its SHA-256, from the records' index);
- the `small` model packed with the golden seed (`small.trlm` beside the plan);
- the checks: `self-test`, then every end-to-end decode vector of tests/golden/e2e_decode.json
  (the oracle's tokens) as `run ... --json` with the tokens, prompt tokens and model SHA-256
  the oracle produced.
"""

from __future__ import annotations

import argparse
import hashlib
import struct
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from pipeline.errors import EXIT_OK
from pipeline.io.atomic import write_atomic
from pipeline.io.inputs import load_json, load_model
from pipeline.lanebuild.handoff import INDEX
from pipeline.lanebuild.native_smoke import SmokePlanError
from pipeline.lanebuild.records import BuildIndex
from pipeline.modelpack import PRESETS, pack
from pipeline.paths import LANES_FILE
from pipeline.tree.lanes import load_lanes
from verify.formats.base import Frozen
from verify.formats.golden import FixtureInput, GoldenVector, U32Expected, U32Input

SCHEMA = "tinyrustlm.native-smoke-plan.v1"
PLAN = "plan.json"
MODEL = "small.trlm"
MODEL_PLACEHOLDER = "{model}"
GOLDEN_E2E = Path("tests/golden/e2e_decode.json")
SMALL_SEED = 7  # crates/core/CONTRACT.md section 7: the golden vectors' model


class SmokeExpect(Frozen):
    tokens: list[int] = Field(description="the oracle's decoded token ids")
    prompt_tokens: list[int]
    model_sha256: str


class SmokeCheck(Frozen):
    id: str
    args: list[str] = Field(description="the artifact's arguments; {model} is the plan's model")
    expect: SmokeExpect | None = Field(description="fields of `--json` output; null: exit 0")


class NativeSmokePlan(Frozen):
    """`plan.json`: what `python -m pipeline.lanebuild.native_smoke` runs on a native runner."""

    schema_: Literal["tinyrustlm.native-smoke-plan.v1"] = Field(
        "tinyrustlm.native-smoke-plan.v1", alias="schema"
    )
    lane: str
    source_revision: str
    artifact: str = Field(description="path of the artifact in the records folder")
    artifact_sha256: str
    model: str = Field(description="model file beside the plan")
    model_sha256: str
    checks: list[SmokeCheck] = Field(min_length=1)


def _f32(bits: str | int) -> str:
    """An f32 bit pattern (0x string) as the shortest decimal that parses back to it."""
    value: float = struct.unpack("<f", int(str(bits), 16).to_bytes(4, "little"))[0]
    return repr(value)


def run_args(vector: GoldenVector) -> list[str]:
    """The native CLI's `run` arguments that replay one end-to-end golden vector."""
    p = vector.params
    return [
        "run",
        "--model",
        MODEL_PLACEHOLDER,
        "--prompt",
        str(p["prompt"]),
        "--seed",
        str(p["seed"]),
        "--max-tokens",
        str(vector.shape["max_tokens"]),
        "--temperature",
        _f32(p["temperature"]),
        "--top-k",
        str(p["top_k"]),
        "--top-p",
        _f32(p["top_p"]),
        "--repetition-penalty",
        _f32(p["repetition_penalty"]),
        "--json",
    ]


def golden_checks(golden_file: Path) -> list[dict[str, Any]]:
    """One check per end-to-end vector: argv and the oracle's outputs."""
    raw = load_json(golden_file, "json")
    if not isinstance(raw, list):
        raise SmokePlanError(
            "expected a JSON list of golden vectors",
            where=str(golden_file),
            error_id="smoke-plan.golden",
        )
    checks: list[dict[str, Any]] = []
    for record in raw:
        vector = GoldenVector.model_validate(record)
        model, prompt = vector.inputs["model"], vector.inputs["prompt_tokens"]
        if not (
            isinstance(vector.expected, U32Expected)
            and isinstance(model, FixtureInput)
            and isinstance(prompt, U32Input)
        ):
            raise SmokePlanError(
                f"golden vector {vector.id} is not an end-to-end decode vector",
                where=str(golden_file),
                error_id="smoke-plan.golden",
            )
        checks.append(
            {
                "id": vector.id,
                "args": run_args(vector),
                "expect": {
                    "tokens": vector.expected.values,
                    "prompt_tokens": prompt.values,
                    "model_sha256": model.sha256,
                },
            }
        )
    return checks


def make_plan(repo_root: Path, lane: str, records: Path, out: Path) -> Path:
    """Write `out/plan.json` and `out/small.trlm` for `lane`'s artifact in `records`."""
    (spec,) = load_lanes(repo_root / LANES_FILE).select([lane])
    if spec.kind != "native":
        raise SmokePlanError(
            f"lane {lane} is a {spec.kind} lane: only native binaries run the native smoke plan",
            where=str(LANES_FILE),
            error_id="smoke-plan.not-native",
        )
    index = load_model(BuildIndex, records / INDEX, "build-index")
    entry = next((e for e in index.lanes if e.lane == lane), None)
    if entry is None:
        raise SmokePlanError(
            f"lane {lane} is not in the records",
            where=str(records / INDEX),
            hint="build it first: tinyrustlm-release build --lane ID --records-out DIR",
            error_id="smoke-plan.lane-missing",
        )
    model = pack(PRESETS["small"], SMALL_SEED)
    checks = golden_checks(repo_root / GOLDEN_E2E)
    want = {c["expect"]["model_sha256"] for c in checks}
    got = hashlib.sha256(model).hexdigest()
    if want != {got}:
        raise SmokePlanError(
            f"the packed small model is {got[:16]}…, the golden vectors expect {sorted(want)}",
            where=str(GOLDEN_E2E),
            hint="the packer changed: regenerate tests/golden/ (nox -s golden)",
            error_id="smoke-plan.model-drift",
        )
    plan = NativeSmokePlan.model_validate(
        {
            "schema": SCHEMA,
            "lane": lane,
            "source_revision": index.source_revision,
            "artifact": entry.artifact,
            "artifact_sha256": entry.sha256,
            "model": MODEL,
            "model_sha256": got,
            "checks": [{"id": "self-test", "args": ["self-test"], "expect": None}, *checks],
        }
    )
    write_atomic(out / MODEL, model)
    write_atomic(out / PLAN, plan.model_dump_json(by_alias=True, indent=2).encode() + b"\n")
    return out / PLAN


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lane", required=True, metavar="ID", help="the lane to plan for")
    parser.add_argument(
        "--records", required=True, type=Path, metavar="DIR", help="build --records-out folder"
    )
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="plan folder")
    parser.add_argument("--repo", type=Path, default=Path(), help="repository root")


def run(args: argparse.Namespace) -> int:
    path = make_plan(args.repo.resolve(), args.lane, args.records, args.out)
    print(f"native smoke plan for {args.lane}: {path}")
    return EXIT_OK
