"""A minimal wasmtime host for the `tr_*` ABI (record layouts: crates/core/CONTRACT.md)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import wasmtime

RESULT_NAMES = (
    "Ok",
    "InvalidArgument",
    "UnsupportedAbi",
    "UnsupportedFeature",
    "InvalidHandle",
    "StaleHandle",
    "Bounds",
    "Alignment",
    "IntegerOverflow",
    "OutOfMemory",
    "InvalidModel",
    "HashMismatch",
    "UnsupportedQuantization",
    "UnsupportedShape",
    "ContextExceeded",
    "Cancelled",
    "WorkerFailure",
    "SelfTestFailed",
    "NumericalFailure",
    "TrapRecoveredByHost",
    "InternalInvariant",
)


def engine(simd: bool) -> wasmtime.Engine:
    cfg = wasmtime.Config()
    cfg.wasm_simd = simd
    cfg.wasm_relaxed_simd = False  # wasmtime-py aborts if simd is off and relaxed simd on
    cfg.wasm_threads = False
    return wasmtime.Engine(cfg)


class WasmRuntime:
    """One instance of a runtime module with no imports."""

    def __init__(self, path: Path, simd: bool = False) -> None:
        self.store = wasmtime.Store(engine(simd))
        module = wasmtime.Module.from_file(self.store.engine, str(path))
        self.instance = wasmtime.Instance(self.store, module, [])
        exports = self.instance.exports(self.store)
        memory = exports["memory"]
        assert isinstance(memory, wasmtime.Memory)
        self.memory = memory
        self.fn: dict[str, Any] = {
            name: exports[name] for name in dir_exports(self.instance, self.store)
        }

    def call(self, name: str, *args: int) -> int:
        return int(self.fn[name](self.store, *args))

    def write(self, data: bytes) -> int:
        addr = self.call("tr_alloc", len(data))
        assert addr != 0
        self.memory.write(self.store, data, addr)
        return addr

    def read(self, addr: int, n: int) -> bytes:
        return bytes(self.memory.read(self.store, addr, addr + n))

    def load_model(self, model: bytes) -> tuple[str, int]:
        src, out = self.write(model), self.call("tr_alloc", 8)
        code = self.call("tr_model_load", src, len(model), out)
        self.call("tr_free", src, len(model))
        handle = struct.unpack("<Q", self.read(out, 8))[0]
        return RESULT_NAMES[code], handle

    def session(
        self,
        model: int,
        seed: int,
        temperature: float,
        top_k: int,
        top_p: float,
        penalty: float,
        context: int = 0,
    ) -> int:
        config = struct.pack("<QQfIffII", seed, 0, temperature, top_k, top_p, penalty, context, 0)
        cfg, out = self.write(config), self.call("tr_alloc", 8)
        assert RESULT_NAMES[self.call("tr_session_new", model, cfg, len(config), out)] == "Ok"
        return int(struct.unpack("<Q", self.read(out, 8))[0])

    def prefill(self, session: int, tokens: list[int]) -> str:
        buf = self.write(struct.pack(f"<{len(tokens)}I", *tokens))
        return RESULT_NAMES[self.call("tr_prefill", session, buf, len(tokens))]

    def decode(self, session: int) -> tuple[str, int, bool]:
        out = self.call("tr_alloc", 24)
        code = self.call("tr_decode", session, out)
        token, flags = struct.unpack("<II", self.read(out, 8))
        return RESULT_NAMES[code], token, bool(flags & 1)

    def path_counters(self) -> tuple[int, int, int, int]:
        """(scalar kernel calls, simd kernel calls, workers, participation bit mask)."""
        out = self.call("tr_alloc", 24)
        assert self.call("tr_path_counters", out) == 0
        scalar, simd, workers, mask = struct.unpack("<QQII", self.read(out, 24))
        return int(scalar), int(simd), int(workers), int(mask)


def dir_exports(instance: wasmtime.Instance, store: wasmtime.Store) -> list[str]:
    items = instance.exports(store).items()
    return [name for name, item in items if isinstance(item, wasmtime.Func)]
