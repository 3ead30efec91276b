"""Run a Wasm lane's `tr_self_test` in wasmtime, in its own process.

Usage: python -m pipeline.lanebuild.smoke_wasmtime FILE --simd {0,1}
Prints one JSON line {"code": int, "engine": str}; exit 0 only if the self-test returned 0.
A separate process because wasmtime-py can abort the whole interpreter on some configs.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path

import wasmtime


def engine_for(simd: bool) -> wasmtime.Engine:
    config = wasmtime.Config()
    # The engine accepts exactly the lane's features, so validation itself is a check. Relaxed
    # SIMD must be switched off with SIMD or wasmtime-py 50 aborts the process.
    config.wasm_relaxed_simd = False
    config.wasm_simd = simd
    config.wasm_threads = False
    config.wasm_multi_memory = False
    config.wasm_memory64 = False
    config.wasm_tail_call = False
    config.wasm_gc = False
    config.wasm_function_references = False
    config.wasm_exceptions = False
    return wasmtime.Engine(config)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wasm", type=Path)
    parser.add_argument("--simd", type=int, choices=[0, 1], required=True)
    args = parser.parse_args()
    engine = engine_for(bool(args.simd))
    store = wasmtime.Store(engine)
    module = wasmtime.Module(engine, args.wasm.read_bytes())
    instance = wasmtime.Instance(store, module, [])
    self_test = instance.exports(store)["tr_self_test"]
    assert isinstance(self_test, wasmtime.Func)
    code = self_test(store)
    print(json.dumps({"code": code, "engine": f"wasmtime-py {version('wasmtime')}"}))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
