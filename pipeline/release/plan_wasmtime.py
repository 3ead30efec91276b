"""Ask one Wasm artifact for its memory plans, in wasmtime, as js/loader.js asks (in a process of
its own: wasmtime-py can abort the interpreter on some configurations).

Usage: python -m pipeline.release.plan_wasmtime WASM MODEL --simd {0,1} --relaxed {0,1}
           --ask WORKERS:CONTEXT [--ask ...]

The module is instantiated once, as the loader's `planner` (crates/wasm/js/host.js) does: a
module that owns its memory as it is; a module that imports a shared memory (the threads
lanes) over a fresh shared memory of its declared minimum, no worker started. Then, like the
loader's admission (session.js `preflight`): `tr_model_prefix_bytes` over the model's first
64 bytes gives the length of its header and directory, and `tr_plan_header` over those bytes
and the file's length, loaded in place (no load copy), at each (workers, context) asked.
Prints one JSON document {"plans": [{"workers", "context", "parts": [u64 x 11], "peak_load",
"peak_prefill", "steady_decode", "largest": index}]} (the record's fields in its order,
CONTRACT.md §9; names are the caller's).
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

from pipeline.wasmhost import engine, expect_ok

MODEL_HEADER_BYTES = 64  # what tr_model_prefix_bytes needs to see (abi.js MODEL_HEADER_BYTES)
U64 = struct.Struct("<Q")


class _SharedMemory(wasmtime.SharedMemory):
    """wasmtime-py 50's SharedMemory passes a pointer to its pointer as an import (a TypeError
    at instantiation); this one passes the pointer itself."""

    def _as_extern(self) -> ffi.wasmtime_extern_t:
        union = ffi.wasmtime_extern_union(sharedmemory=self.ptr())
        return ffi.wasmtime_extern_t(ffi.WASMTIME_EXTERN_SHAREDMEMORY, union)


def _shared_memory_import(module: wasmtime.Module) -> wasmtime.MemoryType | None:
    for item in module.imports:
        if isinstance(item.type, wasmtime.MemoryType) and item.type.is_shared:
            return item.type
    return None


class Planner:
    """One instance of a lane's module, asked only what needs no model loaded."""

    def __init__(self, wasm: bytes, simd: bool, relaxed: bool) -> None:
        plain = engine(simd, True if relaxed else None)
        module = wasmtime.Module(plain, wasm) if self._owns_memory(plain, wasm) else None
        if module is not None:
            self.store = wasmtime.Store(plain)
            self.instance = wasmtime.Instance(self.store, module, [])
            self._memory: wasmtime.Memory | wasmtime.SharedMemory = self._exported_memory()
            return
        threads = engine(True, True if relaxed else None, threads=True)
        module = wasmtime.Module(threads, wasm)
        declared = _shared_memory_import(module)
        if declared is None:
            raise SystemExit("the module neither owns its memory nor imports a shared one")
        self.store = wasmtime.Store(threads)
        limits = declared.limits
        # a fresh shared memory of the import's declared minimum (host.js `planner`)
        memory_type = wasmtime.MemoryType(wasmtime.Limits(limits.min, limits.max), shared=True)
        shared = _SharedMemory(threads, memory_type)
        imports: list[Any] = []
        for item in module.imports:
            if not isinstance(item.type, wasmtime.MemoryType):
                raise SystemExit(f"unexpected import {item.module}.{item.name}")
            imports.append(shared)
        self.instance = wasmtime.Instance(self.store, module, imports)
        self._memory = shared

    @staticmethod
    def _owns_memory(plain: wasmtime.Engine, wasm: bytes) -> bool:
        try:
            module = wasmtime.Module(plain, wasm)
        except wasmtime.WasmtimeError:
            return False  # a threads lane: the single-threaded engine refuses its atomics
        return _shared_memory_import(module) is None

    def _exported_memory(self) -> wasmtime.Memory:
        memory = self.instance.exports(self.store).get("memory")
        if not isinstance(memory, wasmtime.Memory):
            raise SystemExit("the module exports no memory")
        return memory

    def call(self, name: str, *args: int) -> int:
        fn = self.instance.exports(self.store).get(name)
        if not isinstance(fn, wasmtime.Func):
            raise SystemExit(f"the module exports no function {name}")
        return int(fn(self.store, *args))

    def write(self, address: int, data: bytes) -> None:
        if isinstance(self._memory, wasmtime.SharedMemory):
            view = self._memory.data_ptr()
            for i, byte in enumerate(data):
                view[address + i] = byte
        else:
            self._memory.write(self.store, data, address)

    def read(self, address: int, length: int) -> bytes:
        if isinstance(self._memory, wasmtime.SharedMemory):
            view = self._memory.data_ptr()
            return bytes(view[address : address + length])
        return bytes(self._memory.read(self.store, address, address + length))

    def window(self, data: bytes, extra: int = 0) -> int:
        address = self.call("tr_alloc", max(1, len(data) + extra))
        if address == 0:
            raise SystemExit(f"tr_alloc({len(data) + extra}) failed")
        self.write(address, data)
        return address

    def prefix_bytes(self, header: bytes) -> int:
        at = self.window(header)
        try:
            return self.call("tr_model_prefix_bytes", at, len(header))
        finally:
            self.call("tr_free", at, max(1, len(header)))

    def plan(self, prefix: bytes, size: int, workers: int, context: int) -> dict[str, Any]:
        record = self.call("tr_plan_record_bytes")
        at = self.window(prefix, record)
        try:
            code = self.call(
                "tr_plan_header", at, len(prefix), size, context, workers, 1, at + len(prefix)
            )
            expect_ok("tr_plan_header", code)
            raw = self.read(at + len(prefix), record)
        finally:
            self.call("tr_free", at, len(prefix) + record)
        fields = [U64.unpack_from(raw, 8 * i)[0] for i in range(record // 8)]
        parts, (peak_load, peak_prefill, steady_decode, largest) = fields[:-4], fields[-4:]
        return {
            "workers": workers,
            "context": context,
            "parts": parts,
            "peak_load": peak_load,
            "peak_prefill": peak_prefill,
            "steady_decode": steady_decode,
            "largest": largest,
        }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("wasm", type=Path)
    parser.add_argument("model", type=Path)
    parser.add_argument("--simd", type=int, choices=(0, 1), required=True)
    parser.add_argument("--relaxed", type=int, choices=(0, 1), required=True)
    parser.add_argument("--ask", action="append", required=True, help="WORKERS:CONTEXT")
    args = parser.parse_args()
    planner = Planner(args.wasm.read_bytes(), bool(args.simd), bool(args.relaxed))
    size = args.model.stat().st_size
    with args.model.open("rb") as f:
        header = f.read(MODEL_HEADER_BYTES)
        length = planner.prefix_bytes(header)
        if length == 0 or length > size:
            raise SystemExit(f"tr_model_prefix_bytes refused the model's header ({length})")
        f.seek(0)
        prefix = f.read(length)
    plans = []
    for ask in args.ask:
        workers, context = (int(x) for x in ask.split(":"))
        plans.append(planner.plan(prefix, size, workers, context))
    print(json.dumps({"plans": plans, "prefix_bytes": length}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
