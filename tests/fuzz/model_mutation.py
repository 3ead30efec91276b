"""Model mutation: malformed models through the Wasm ABI (`tr_model_load` in wasmtime).

Contract: every mutant gives a TrResult code (never a trap); the named cases of
tests/crates/runtime/malformed.py give exactly their code; a model that loads also opens a
session, prefills and decodes without trapping; and the instance stays healthy (its
self-test passes) after every rejection. Outcomes are counted per mutation class by
result name (`Ok` loads are followed through a decode: `Ok+<decode result>`).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

from pipeline.modelpack import DIR_ENTRY, HEADER, PRESETS, pack
from pipeline.wasmhost import ENGINE_ERRORS, RESULT_NAMES, SessionConfig, WasmHost
from tests.crates.runtime.malformed import CASES, mutated
from tests.fuzz.tally import Tally, case_rng
from verify.formats.fuzz import FuzzCampaign

NAME = "model_mutation"
DEFAULT_COUNT = 10_000  # >= 10,000 asked (issue 26); a case costs about 2 ms
REPO = Path(__file__).resolve().parents[2]
HEALTH_EVERY = 250  # cases between self-tests of the instance
BOUNDARY_U32 = (0, 1, 2, 3, 4, 7, 8, 255, 256, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFE, 0xFFFF_FFFF)
BOUNDARY_U64 = (0, 1, 8, 64, 1 << 32, 1 << 40, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)
SPECIAL_F32 = (float("nan"), float("inf"), float("-inf"), 3.4e38, -0.0, 1e-45)


def default_module() -> Path:
    """The scalar lane from the last build (the campaign needs no SIMD in the engine)."""
    found = sorted(REPO.glob("build/scalar-wasm32/runtime.*.wasm"))
    if not found:
        raise FileNotFoundError("no scalar lane in build/: run `tinyrustlm-release build "
                                "--lane scalar-wasm32` first, or pass module=")  # fmt: skip
    return found[-1]


def _field(rng: random.Random, b: bytearray, start: int, end: int) -> None:
    """Set one aligned u32 or u64 in b[start:end] to a boundary or random value."""
    if rng.random() < 0.7:
        at = start + 4 * rng.randrange((end - start) // 4)
        value = rng.choice((*BOUNDARY_U32, len(b), len(b) - 1, len(b) + 1, rng.getrandbits(32)))
        b[at : at + 4] = struct.pack("<I", value & 0xFFFF_FFFF)
    else:
        at = start + 8 * rng.randrange((end - start) // 8)
        value = rng.choice((*BOUNDARY_U64, len(b), len(b) + 8, rng.getrandbits(64)))
        b[at : at + 8] = struct.pack("<Q", value)


def _mutations(tensor_count: int) -> dict[str, Callable[[random.Random, bytes], bytes]]:
    directory_end = HEADER.size + tensor_count * DIR_ENTRY.size

    def header_field(rng: random.Random, d: bytes) -> bytes:
        b = bytearray(d)
        _field(rng, b, 0, HEADER.size)
        return bytes(b)

    def directory_field(rng: random.Random, d: bytes) -> bytes:
        b = bytearray(d)
        entry = HEADER.size + DIR_ENTRY.size * rng.randrange(tensor_count)
        _field(rng, b, entry, entry + DIR_ENTRY.size)
        return bytes(b)

    def metadata_byte(rng: random.Random, d: bytes) -> bytes:
        b = bytearray(d)
        b[rng.randrange(directory_end)] = rng.randrange(256)
        return bytes(b)

    def any_byte(rng: random.Random, d: bytes) -> bytes:
        b = bytearray(d)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)

    def data_float(rng: random.Random, d: bytes) -> bytes:
        b = bytearray(d)
        at = directory_end + 4 * rng.randrange((len(b) - directory_end) // 4)
        b[at : at + 4] = struct.pack("<f", rng.choice(SPECIAL_F32))
        return bytes(b)

    def truncate(rng: random.Random, d: bytes) -> bytes:
        return d[: rng.randrange(1, len(d))]

    def append(rng: random.Random, d: bytes) -> bytes:
        return d + rng.randbytes(rng.randint(1, 64))

    def named_case(rng: random.Random, d: bytes) -> bytes:
        return mutated(d, rng.choice(CASES))

    return {
        "header-field": header_field,
        "directory-field": directory_field,
        "metadata-byte": metadata_byte,
        "any-bytes": any_byte,
        "data-float": data_float,
        "truncate": truncate,
        "append": append,
        "named-case": named_case,
    }


def _decode_once(host: WasmHost, handle: int) -> str:
    """Open a session on a model that loaded, prefill two tokens, decode one; free both."""
    code, session = host.session_new(handle, SessionConfig(seed=1))
    if code != 0:
        return f"session:{RESULT_NAMES[code]}"
    code = host.prefill(session, [256, 104])
    if code == 0:
        code = host.decode(session).code
    host.session_free(session)
    return RESULT_NAMES[code]


def run(seed: int, count: int, module: Path | None = None) -> FuzzCampaign:
    path = module or default_module()
    model = pack(PRESETS["tiny"], seed)
    tensors = struct.unpack_from("<I", model, 52)[0]  # tensor_count (CONTRACT.md header)
    mutations = _mutations(tensors)
    expected = {mutated(model, case): case for case in CASES}
    tally = Tally(NAME, seed)
    host = WasmHost(path, simd=False)
    for index in range(count):
        rng = case_rng(seed, index)
        name = rng.choice(sorted(mutations))
        data = mutations[name](rng, model)
        tally.count += 1
        try:
            code, handle = host.load_model(data)
            result = outcome = RESULT_NAMES[code]
            if result == "Ok":
                outcome = f"Ok+{_decode_once(host, handle)}"
                host.model_free(handle)
        except ENGINE_ERRORS as exc:
            tally.outcome(name, "trap")
            tally.fail(index, name, "trap", str(exc).splitlines()[0])
            host = WasmHost(path, simd=False)  # a trapped instance is not reused
            continue
        tally.outcome(name, outcome)
        case = expected.get(data)
        if case is not None and result != case.result:
            tally.fail(index, name, "wrong-result", f"{case.name}: {result}, want {case.result}")
        if (index + 1) % HEALTH_EVERY == 0 and host.self_test() != 0:
            tally.fail(index, name, "unhealthy", "tr_self_test failed after this case")
            host = WasmHost(path, simd=False)
    return tally.result()
