"""Run the single-threaded Wasm lanes of a plan in wasmtime, in a process of its own.

Usage: python -m pipeline.conformance.wasmtime_run PLAN.json
Prints one JSON document shaped like the page's lane reports (lanerun.mjs). A separate
process because wasmtime-py can abort the interpreter; the engine enables exactly the lane's
features (SIMD only for a SIMD lane, relaxed SIMD only for a relaxed one, pipeline/wasmhost.py),
so validation is itself a check. A relaxed lane runs twice, with wasmtime's relaxed SIMD
deterministic and with the host's native semantics: its row is the deterministic run's, and
fails unless the native run gave the same results, every field but the timings (the int8 tier
is exact under every allowed semantics, CONTRACT.md §12); `relaxed_modes` names both runs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from pipeline.wasmhost import (
    ENGINE_ERRORS,
    SessionConfig,
    WasmHost,
    encode_prompt,
    engine_name,
    expect_ok,
)

ERRORS = (*ENGINE_ERRORS, RuntimeError)  # RuntimeError: the host's HostError among others


def load_model(host: WasmHost, data: bytes) -> int:
    code, model = host.load_model(data)
    expect_ok("tr_model_load", code)
    return model


def run_case(host: WasmHost, model: int, c: dict[str, Any]) -> dict[str, Any]:
    """One case's row: its tokens, final PCG state, EOS, and the times the page also reports."""
    t0 = time.perf_counter()
    config = SessionConfig(
        seed=int(c["seed"]),
        stream=int(c["stream"]),
        temperature=c["temperature"],
        top_k=c["top_k"],
        top_p=c["top_p"],
        repetition_penalty=c["repetition_penalty"],
    )
    code, session = host.session_new(model, config)
    expect_ok("tr_session_new", code)
    code = host.prefill(session, encode_prompt(c["prompt"]))
    tokens: list[int] = []
    decode_ms: list[float] = []
    ttft, rng, eos = 0.0, 0, False
    while code == 0 and len(tokens) < c["max_tokens"]:
        t = time.perf_counter()
        step = host.decode(session)
        code = step.code
        if code != 0:
            break
        rng = step.rng_state
        if not tokens:
            ttft = (time.perf_counter() - t0) * 1e3
        else:
            decode_ms.append((time.perf_counter() - t) * 1e3)
        tokens.append(step.token)
        if step.done:
            eos = True
            break
    host.session_free(session)
    return {
        "id": c["id"],
        "code": code,
        "tokens": tokens,
        "rng_state": f"0x{rng:016x}",
        "eos": eos,
        "ttft_ms": ttft,
        "decode_ms": decode_ms,
    }


def run_lane(
    entry: dict[str, Any], model_bytes: bytes, cases: list[dict[str, Any]]
) -> dict[str, Any]:
    if not entry.get("relaxed"):
        return run_mode(entry, model_bytes, cases, None)
    runs = {
        "deterministic": run_mode(entry, model_bytes, cases, True),
        "native": run_mode(entry, model_bytes, cases, False),
    }
    out = dict(runs["deterministic"])
    out["relaxed_modes"] = {mode: run["status"] for mode, run in runs.items()}
    deterministic, native = (
        [{k: v for k, v in r.items() if not k.endswith("_ms")} for r in runs[mode]["results"]]
        for mode in ("deterministic", "native")
    )
    if out["status"] == "ran" and (runs["native"]["status"] != "ran" or native != deterministic):
        out["status"] = "failed"
        out["error"] = (
            "relaxed SIMD native semantics gave other results than deterministic: "
            f"{runs['native']['error'] or 'results differ'}"
        )
    return out


def run_mode(
    entry: dict[str, Any],
    model_bytes: bytes,
    cases: list[dict[str, Any]],
    relaxed_deterministic: bool | None,
) -> dict[str, Any]:
    try:
        host = WasmHost(
            Path(entry["path"]),
            simd=bool(entry["simd"]),
            relaxed_deterministic=relaxed_deterministic,
        )
        model = load_model(host, model_bytes)
    except ERRORS as exc:
        return {
            "lane": entry["lane"],
            "status": "failed",
            "error": str(exc),
            "results": [],
            "receipt": None,
        }
    results = []
    for c in cases:
        try:
            results.append(run_case(host, model, c))
        except ERRORS as exc:
            results.append({"id": c["id"], "error": str(exc).splitlines()[0]})
    return {
        "lane": entry["lane"],
        "status": "ran",
        "error": None,
        "results": results,
        "receipt": None,
    }


def main() -> int:
    plan = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    model_bytes = Path(plan["model_path"]).read_bytes()
    lanes = [run_lane(e, model_bytes, plan["cases"]) for e in plan["lanes"]]
    print(json.dumps({"version": engine_name(), "lanes": lanes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
