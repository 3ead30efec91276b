"""The scalar wasm lane in a real engine (wasmtime, SIMD disabled): no imports, MVP-only,
self-test passes, the ABI reproduces the end-to-end golden tokens, malformed models return
codes without trapping, path counters show scalar execution only. Integration."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.modelpack import PRESETS, pack
from pipeline.wasmhost import RESULT_NAMES, SessionConfig, WasmHost
from verify.formats.golden import GoldenVector, U32Expected
from verify.policy import load_wasm_policies

from .malformed import CASES, Case, mutated, truncation_points

pytestmark = pytest.mark.integration
GOLDEN = Path(__file__).resolve().parents[2] / "golden"
WASM_TOOLS = Path(sys.executable).parent / "wasm-tools"
# Every function export the lane policy requires of the scalar lane (verify/policy/wasm.json).
EXPORTS = set(load_wasm_policies()["scalar-wasm32"].required_exports)


def test_module_is_mvp_only_with_no_imports(scalar_wasm: Path) -> None:
    done = subprocess.run(
        [str(WASM_TOOLS), "validate", "--features", "mvp,mutable-global", str(scalar_wasm)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = subprocess.run(
        [str(WASM_TOOLS), "print", str(scalar_wasm)], capture_output=True, text=True, check=True
    ).stdout
    assert "(import " not in text
    assert '(export "memory" (memory 0))' in text


def test_self_test_and_identity_exports(scalar_wasm: Path) -> None:
    host = WasmHost(scalar_wasm, simd=False)
    assert host.exports >= EXPORTS
    assert host.self_test() == 0
    identity = [host.call(f) for f in ("tr_abi_version", "tr_runtime_semantics", "tr_lane")]
    assert identity == [1, 1, 0]
    counters = host.path_counters()
    assert counters.scalar > 0 and counters.simd == 0
    assert (counters.workers, counters.participated) == (0, 0)  # no pool in the scalar lane


E2E = [GoldenVector.model_validate(r) for r in json.loads((GOLDEN / "e2e_decode.json").read_text())]


def _f(v: GoldenVector, name: str) -> float:
    value = v.params[name]
    assert isinstance(value, str)
    return float(struct.unpack("<f", int(value, 16).to_bytes(4, "little"))[0])


@pytest.mark.parametrize("vector", E2E, ids=[v.id for v in E2E])
def test_abi_reproduces_the_end_to_end_golden_tokens(
    scalar_wasm: Path, vector: GoldenVector
) -> None:
    host = WasmHost(scalar_wasm, simd=False)
    code, model = host.load_model(pack(PRESETS["small"], 7))
    assert RESULT_NAMES[code] == "Ok"
    seed, top_k = vector.params["seed"], vector.params["top_k"]
    assert isinstance(seed, int) and isinstance(top_k, int)
    config = SessionConfig(
        seed=seed,
        temperature=_f(vector, "temperature"),
        top_k=top_k,
        top_p=_f(vector, "top_p"),
        repetition_penalty=_f(vector, "repetition_penalty"),
    )
    code, session = host.session_new(model, config)
    assert RESULT_NAMES[code] == "Ok"
    prompt = getattr(vector.inputs["prompt_tokens"], "values", [])
    assert RESULT_NAMES[host.prefill(session, prompt)] == "Ok"
    tokens = []
    for _ in range(vector.shape["max_tokens"]):
        step = host.decode(session)
        assert step.result == "Ok"
        tokens.append(step.token)
        if step.done:
            break
    assert isinstance(vector.expected, U32Expected)
    assert tokens == vector.expected.values
    assert host.session_free(session) == 0
    assert host.model_free(model) == 0
    assert RESULT_NAMES[host.model_free(model)] == "StaleHandle"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_model_returns_its_code_without_trapping(
    scalar_wasm: Path, tiny_bytes: bytes, case: Case
) -> None:
    host = WasmHost(scalar_wasm, simd=False)
    assert RESULT_NAMES[host.load_model(mutated(tiny_bytes, case))[0]] == case.result


def test_truncated_models_return_bounds_without_trapping(
    scalar_wasm: Path, tiny_bytes: bytes
) -> None:
    host = WasmHost(scalar_wasm, simd=False)
    wrong = []
    for cut in truncation_points(len(tiny_bytes))[::3]:
        if cut == 0:
            continue  # tr_alloc(0) has no window to pass
        result = RESULT_NAMES[host.load_model(tiny_bytes[:cut])[0]]
        if result != "Bounds":
            wrong.append((cut, result))
    assert wrong == []
    assert host.self_test() == 0, "instance still healthy after every rejection"


def test_preflight_rejects_a_context_that_does_not_fit(scalar_wasm: Path) -> None:
    host = WasmHost(scalar_wasm, simd=False)
    code, model = host.load_model(pack(PRESETS["small"], 7))
    assert RESULT_NAMES[code] == "Ok"
    code, peak, steady = host.preflight(model, 256, 2**63)
    assert code == 0
    assert peak >= steady > 0
    assert RESULT_NAMES[host.preflight(model, 256, peak - 1)[0]] == "OutOfMemory"
    assert RESULT_NAMES[host.preflight(model, 257, 2**63)[0]] == "ContextExceeded"
