"""Run the single-threaded Wasm lanes of a plan in wasmtime, in a process of its own.

Usage: python -m pipeline.conformance.wasmtime_run PLAN.json
Prints one JSON document shaped like the page's lane reports (lanerun.mjs). A separate
process because wasmtime-py can abort the interpreter; the engine enables exactly the lane's
features (SIMD only for a SIMD lane), so validation is itself a check.
"""

from __future__ import annotations

import json
import struct
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import wasmtime

from pipeline.lanebuild.smoke_wasmtime import engine_for

BOS = 256  # the byte tokenizer (crates/core/src/tokenizer.rs): BOS, then UTF-8 bytes


class Lane:
    def __init__(self, path: Path, simd: bool) -> None:
        self.store = wasmtime.Store(engine_for(simd))
        module = wasmtime.Module(self.store.engine, path.read_bytes())
        self.instance = wasmtime.Instance(self.store, module, [])
        self.ex = self.instance.exports(self.store)
        memory = self.ex["memory"]
        assert isinstance(memory, wasmtime.Memory)
        self.memory = memory

    def call(self, name: str, *args: int) -> int:
        fn = self.ex[name]
        assert isinstance(fn, wasmtime.Func)
        return int(fn(self.store, *args))

    def put(self, data: bytes) -> int:
        ptr = self.call("tr_alloc", max(1, len(data)))
        if ptr == 0:
            raise RuntimeError(f"tr_alloc({len(data)}) failed")
        self.memory.write(self.store, data, ptr)
        return ptr

    def get(self, ptr: int, n: int) -> bytes:
        return bytes(self.memory.read(self.store, ptr, ptr + n))

    def checked(self, name: str, *args: int) -> None:
        code = self.call(name, *args)
        if code != 0:
            raise RuntimeError(f"{name} returned {code}")

    def load_model(self, data: bytes) -> int:
        src, out = self.put(data), self.put(bytes(8))
        self.checked("tr_model_load", src, len(data), out)
        self.call("tr_free", src, len(data))
        return int(struct.unpack("<Q", self.get(out, 8))[0])

    def case(self, model: int, c: dict[str, Any]) -> dict[str, Any]:
        t0 = time.perf_counter()
        config = struct.pack(
            "<QQfIffII",
            int(c["seed"]),
            int(c["stream"]),
            c["temperature"],
            c["top_k"],
            c["top_p"],
            c["repetition_penalty"],
            0,
            0,
        )
        cfg, out = self.put(config), self.put(bytes(8))
        self.checked("tr_session_new", model, cfg, len(config), out)
        session = int(struct.unpack("<Q", self.get(out, 8))[0])
        prompt = [BOS, *c["prompt"].encode("utf-8")]
        buf = self.put(struct.pack(f"<{len(prompt)}I", *prompt))
        code = self.call("tr_prefill", session, buf, len(prompt))
        step = self.put(bytes(24))
        tokens: list[int] = []
        decode_ms: list[float] = []
        ttft, rng, eos = 0.0, 0, False
        while code == 0 and len(tokens) < c["max_tokens"]:
            t = time.perf_counter()
            code = self.call("tr_decode", session, step)
            if code != 0:
                break
            token, flags, rng = struct.unpack("<IIQ", self.get(step, 16))
            if not tokens:
                ttft = (time.perf_counter() - t0) * 1e3
            else:
                decode_ms.append((time.perf_counter() - t) * 1e3)
            tokens.append(token)
            if flags & 1:
                eos = True
                break
        self.call("tr_session_free", session)
        for ptr, n in ((cfg, len(config)), (out, 8), (buf, 4 * len(prompt)), (step, 24)):
            self.call("tr_free", ptr, n)
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
    try:
        lane = Lane(Path(entry["path"]), bool(entry["simd"]))
        model = lane.load_model(model_bytes)
    except (wasmtime.WasmtimeError, wasmtime.Trap, RuntimeError) as exc:
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
            results.append(lane.case(model, c))
        except (wasmtime.WasmtimeError, wasmtime.Trap, RuntimeError) as exc:
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
    print(json.dumps({"version": f"wasmtime-py {version('wasmtime')}", "lanes": lanes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
