"""Run a Wasm lane's `tr_self_test` in wasmtime (the host: pipeline/wasmhost.py), in its own
process.

Usage: python -m pipeline.lanebuild.smoke_wasmtime FILE --features {mvp,simd128,relaxed-simd}
Prints one JSON line {"code": int, "engine": str[, "codes": {run: int}]}; exit 0 only if every
self-test returned 0. A relaxed-SIMD lane runs twice, each in an engine of its own: with
wasmtime's relaxed SIMD deterministic, and with its native (host-dependent) semantics.
A separate process because wasmtime-py can abort the whole interpreter on some configs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.wasmhost import WasmHost, engine_name

# --features -> (simd, each relaxed mode to run: None = relaxed SIMD off)
FEATURES: dict[str, tuple[bool, tuple[bool | None, ...]]] = {
    "mvp": (False, (None,)),
    "simd128": (True, (None,)),
    "relaxed-simd": (True, (True, False)),
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wasm", type=Path)
    parser.add_argument("--features", choices=sorted(FEATURES), required=True)
    args = parser.parse_args()
    simd, modes = FEATURES[args.features]
    codes = {
        ("deterministic" if mode else "native"): WasmHost(
            args.wasm, simd=simd, relaxed_deterministic=mode
        ).self_test()
        for mode in modes
    }
    code = next((c for c in codes.values() if c != 0), 0)
    doc: dict[str, object] = {"code": code, "engine": engine_name()}
    if modes != (None,):
        doc["codes"] = codes
    print(json.dumps(doc))
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
