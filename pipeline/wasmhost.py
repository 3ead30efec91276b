"""The one Python host of the `tr_*` ABI, over wasmtime-py: the engine each lane runs in,
instantiation, the exports and every record they read or write.

Users: the build's smoke run (pipeline/lanebuild/smoke_wasmtime.py), the conformance matrix's
wasmtime runner (pipeline/conformance/wasmtime_run.py), the model-mutation fuzz campaign
(tests/fuzz/model_mutation.py) and tests/crates/runtime. wasmtime-py can abort the whole interpreter
on some configurations, so the production users run it in a process of their own.

Record layouts: crates/core/CONTRACT.md ("ABI"), written by crates/wasm/src/lib.rs; the
JavaScript twin of this module is crates/wasm/js/abi.js. The single-threaded lanes import
nothing; the threads lane imports a shared memory and does not run here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import wasmtime

# TrResult names by code (crates/core/src/result.rs `ALL_RESULTS`; codes are ABI, only appended).
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
OK = 0

# The records, little-endian (CONTRACT.md). One Struct per layout; nothing else packs them.
HANDLE = struct.Struct("<Q")  # every handle output: generation << 32 | slot
# seed, stream, temperature, top_k, top_p, repetition_penalty, context (0 = C_max), reserved 0
SESSION_CONFIG = struct.Struct("<QQfIffII")
DECODE_STEP = struct.Struct("<IIQQ")  # token, flags, pcg state, pcg increment
DONE_FLAG = 1  # DECODE_STEP flags bit 0: EOS / done
# scalar calls, simd calls, workers, participation mask, relaxed calls (of the simd ones)
PATH_COUNTERS = struct.Struct("<QQIIQ")
PREFLIGHT = struct.Struct("<QQ")  # peak_prefill, steady_decode bytes
TOKEN = struct.Struct("<I")  # one u32 token id of a prefill

# The byte tokenizer (crates/core/src/tokenizer.rs): BOS, then the UTF-8 bytes.
BOS = 256


def encode_prompt(text: str) -> list[int]:
    return [BOS, *text.encode("utf-8")]


def engine_name() -> str:
    """How smoke records and conformance reports name this engine."""
    return f"wasmtime-py {version('wasmtime')}"


def engine(
    simd: bool, relaxed_deterministic: bool | None = None, threads: bool = False
) -> wasmtime.Engine:
    """An engine accepting exactly a lane's features (SIMD128 only for a SIMD lane, relaxed SIMD
    only for a relaxed lane, threads and shared memory only for a threads lane), so that
    validating the module is itself a check. `relaxed_deterministic`: None = relaxed SIMD off;
    True = on with wasmtime's deterministic semantics; False = on with the host's native ones."""
    config = wasmtime.Config()
    # Relaxed SIMD must be switched off with SIMD or wasmtime-py 50 aborts the process.
    config.wasm_relaxed_simd = simd and relaxed_deterministic is not None
    config.wasm_relaxed_simd_deterministic = bool(relaxed_deterministic)
    config.wasm_simd = simd
    config.wasm_threads = threads
    config.shared_memory = threads  # wasmtime creates shared memories only when asked to
    config.wasm_multi_memory = False
    config.wasm_memory64 = False
    config.wasm_tail_call = False
    config.wasm_gc = False
    config.wasm_function_references = False
    config.wasm_exceptions = False
    return wasmtime.Engine(config)


# What the engine raises: a module it refuses to compile or instantiate, a trap (after which
# the instance must not be reused).
ENGINE_ERRORS = (wasmtime.WasmtimeError, wasmtime.Trap)


class HostError(RuntimeError):
    """The module broke what the host relies on: no such export, a failed `tr_alloc`, or a
    call that had to succeed (`expect_ok`) returned another code (`code`)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def expect_ok(name: str, code: int) -> None:
    """Raise HostError unless the export `name` returned Ok."""
    if code != OK:
        raise HostError(f"{name} returned {code}", code)


@dataclass(frozen=True)
class SessionConfig:
    """The session config record (defaults: greedy, the model's own context, as abi.js)."""

    seed: int = 0
    stream: int = 0
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    context: int = 0

    def record(self) -> bytes:
        return SESSION_CONFIG.pack(
            self.seed,
            self.stream,
            self.temperature,
            self.top_k,
            self.top_p,
            self.repetition_penalty,
            self.context,
            0,
        )


@dataclass(frozen=True)
class DecodeStep:
    """What `tr_decode` returned and wrote (the record's fields mean something only when Ok)."""

    code: int
    token: int
    done: bool
    rng_state: int
    rng_increment: int

    @property
    def result(self) -> str:
        return RESULT_NAMES[self.code]


@dataclass(frozen=True)
class PathCounters:
    scalar: int  # scalar kernel calls since start
    simd: int  # SIMD kernel calls since start
    workers: int  # threads lane only; 0 elsewhere
    participated: int  # bit i: worker i served a command
    relaxed: int = 0  # of the SIMD calls, those of kernels running a relaxed instruction


class WasmHost:
    """One instance of a single-threaded runtime module (no imports) in its lane's engine.

    Typed calls return TrResult codes (never raise for a code); a trap raises wasmtime.Trap
    and leaves the instance unusable. Every transfer window is freed after the call.
    """

    def __init__(self, module: Path, simd: bool, relaxed_deterministic: bool | None = None) -> None:
        self.store = wasmtime.Store(engine(simd, relaxed_deterministic))
        compiled = wasmtime.Module(self.store.engine, module.read_bytes())
        self.instance = wasmtime.Instance(self.store, compiled, [])
        items = self.instance.exports(self.store)
        self._functions = {n: f for n, f in items.items() if isinstance(f, wasmtime.Func)}
        self._memory = items.get("memory")
        self._windows: dict[int, int] = {}  # address -> length of each live window

    @property
    def live_windows(self) -> int:
        """Transfer windows allocated and not yet freed (every typed call frees its own)."""
        return len(self._windows)

    @property
    def exports(self) -> frozenset[str]:
        """Names of the exported functions."""
        return frozenset(self._functions)

    # -- raw calls and transfer windows ---------------------------------------------------
    def call(self, name: str, *args: int) -> int:
        fn = self._functions.get(name)
        if fn is None:
            raise HostError(f"the module exports no function {name}")
        return int(fn(self.store, *args))

    @property
    def memory(self) -> wasmtime.Memory:
        if not isinstance(self._memory, wasmtime.Memory):
            raise HostError("the module exports no memory")
        return self._memory

    def alloc(self, length: int) -> int:
        """A zeroed transfer window of `length` bytes (at least 1: tr_alloc(0) has none)."""
        length = max(1, length)
        address = self.call("tr_alloc", length)
        if address == 0:
            raise HostError(f"tr_alloc({length}) failed")
        self._windows[address] = length
        return address

    def put(self, data: bytes) -> int:
        """A window holding `data`."""
        address = self.alloc(len(data))
        self.memory.write(self.store, data, address)
        return address

    def read(self, address: int, length: int) -> bytes:
        return bytes(self.memory.read(self.store, address, address + length))

    def free(self, *addresses: int) -> None:
        for address in addresses:
            self.call("tr_free", address, self._windows.pop(address))

    # -- the typed exports ----------------------------------------------------------------
    def self_test(self) -> int:
        return self.call("tr_self_test")

    def load_model(self, data: bytes) -> tuple[int, int]:
        """(code, model handle): the handle means something only when the code is Ok."""
        src, out = self.put(data), self.alloc(HANDLE.size)
        code = self.call("tr_model_load", src, len(data), out)
        (handle,) = HANDLE.unpack(self.read(out, HANDLE.size))
        self.free(src, out)
        return code, int(handle)

    def preflight(self, model: int, context: int, budget: int) -> tuple[int, int, int]:
        """(code, peak_prefill bytes, steady_decode bytes)."""
        out = self.alloc(PREFLIGHT.size)
        code = self.call("tr_preflight", model, context, budget, out)
        peak, steady = PREFLIGHT.unpack(self.read(out, PREFLIGHT.size))
        self.free(out)
        return code, int(peak), int(steady)

    def session_new(self, model: int, config: SessionConfig) -> tuple[int, int]:
        """(code, session handle)."""
        record = config.record()
        cfg, out = self.put(record), self.alloc(HANDLE.size)
        code = self.call("tr_session_new", model, cfg, len(record), out)
        (handle,) = HANDLE.unpack(self.read(out, HANDLE.size))
        self.free(cfg, out)
        return code, int(handle)

    def prefill(self, session: int, tokens: list[int]) -> int:
        buf = self.put(b"".join(TOKEN.pack(t) for t in tokens))
        code = self.call("tr_prefill", session, buf, len(tokens))
        self.free(buf)
        return code

    def decode(self, session: int) -> DecodeStep:
        out = self.alloc(DECODE_STEP.size)
        code = self.call("tr_decode", session, out)
        token, flags, state, increment = DECODE_STEP.unpack(self.read(out, DECODE_STEP.size))
        self.free(out)
        return DecodeStep(code, int(token), bool(flags & DONE_FLAG), int(state), int(increment))

    def session_free(self, session: int) -> int:
        return self.call("tr_session_free", session)

    def model_free(self, model: int) -> int:
        return self.call("tr_model_free", model)

    def path_counters(self) -> PathCounters:
        out = self.alloc(PATH_COUNTERS.size)
        code = self.call("tr_path_counters", out)
        fields = PATH_COUNTERS.unpack(self.read(out, PATH_COUNTERS.size))
        self.free(out)
        expect_ok("tr_path_counters", code)
        return PathCounters(*(int(f) for f in fields))
