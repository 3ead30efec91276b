"""Run a Wasm lane's `tr_self_test` in wasmtime (the host: pipeline/wasmhost.py), in its own
process.

Usage: python -m pipeline.lanebuild.smoke_wasmtime FILE --simd {0,1}
Prints one JSON line {"code": int, "engine": str}; exit 0 only if the self-test returned 0.
A separate process because wasmtime-py can abort the whole interpreter on some configs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.wasmhost import WasmHost, engine_name


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wasm", type=Path)
    parser.add_argument("--simd", type=int, choices=[0, 1], required=True)
    args = parser.parse_args()
    code = WasmHost(args.wasm, simd=bool(args.simd)).self_test()
    print(json.dumps({"code": code, "engine": engine_name()}))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
