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
from verify.formats.golden import GoldenVector, U32Expected

from .malformed import CASES, Case, mutated, truncation_points
from .wasmhost import WasmRuntime

pytestmark = pytest.mark.integration
GOLDEN = Path(__file__).resolve().parents[2] / "golden"
WASM_TOOLS = Path(sys.executable).parent / "wasm-tools"
EXPORTS = {
    "tr_abi_version",
    "tr_runtime_semantics",
    "tr_lane",
    "tr_alloc",
    "tr_free",
    "tr_model_load",
    "tr_preflight",
    "tr_session_new",
    "tr_prefill",
    "tr_decode",
    "tr_session_free",
    "tr_model_free",
    "tr_self_test",
    "tr_path_counters",
}


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
    rt = WasmRuntime(scalar_wasm, simd=False)
    assert set(rt.fn) >= EXPORTS
    assert rt.call("tr_self_test") == 0
    identity = [rt.call(f) for f in ("tr_abi_version", "tr_runtime_semantics", "tr_lane")]
    assert identity == [1, 1, 0]
    scalar, simd, workers, participated = rt.path_counters()
    assert scalar > 0 and simd == 0
    assert (workers, participated) == (0, 0)  # no worker pool in the scalar lane


E2E = [GoldenVector.model_validate(r) for r in json.loads((GOLDEN / "e2e_decode.json").read_text())]


def _f(v: GoldenVector, name: str) -> float:
    value = v.params[name]
    assert isinstance(value, str)
    return float(struct.unpack("<f", int(value, 16).to_bytes(4, "little"))[0])


@pytest.mark.parametrize("vector", E2E, ids=[v.id for v in E2E])
def test_abi_reproduces_the_end_to_end_golden_tokens(
    scalar_wasm: Path, vector: GoldenVector
) -> None:
    rt = WasmRuntime(scalar_wasm, simd=False)
    code, model = rt.load_model(pack(PRESETS["small"], 7))
    assert code == "Ok"
    seed, top_k = vector.params["seed"], vector.params["top_k"]
    assert isinstance(seed, int) and isinstance(top_k, int)
    session = rt.session(
        model,
        seed,
        _f(vector, "temperature"),
        top_k,
        _f(vector, "top_p"),
        _f(vector, "repetition_penalty"),
    )
    prompt = getattr(vector.inputs["prompt_tokens"], "values", [])
    assert rt.prefill(session, prompt) == "Ok"
    tokens = []
    for _ in range(vector.shape["max_tokens"]):
        code, token, done = rt.decode(session)
        assert code == "Ok"
        tokens.append(token)
        if done:
            break
    assert isinstance(vector.expected, U32Expected)
    assert tokens == vector.expected.values
    assert rt.call("tr_session_free", session) == 0
    assert rt.call("tr_model_free", model) == 0
    assert rt.call("tr_model_free", model) == 5  # StaleHandle


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_model_returns_its_code_without_trapping(
    scalar_wasm: Path, tiny_bytes: bytes, case: Case
) -> None:
    rt = WasmRuntime(scalar_wasm, simd=False)
    assert rt.load_model(mutated(tiny_bytes, case))[0] == case.result


def test_truncated_models_return_bounds_without_trapping(
    scalar_wasm: Path, tiny_bytes: bytes
) -> None:
    rt = WasmRuntime(scalar_wasm, simd=False)
    wrong = []
    for cut in truncation_points(len(tiny_bytes))[::3]:
        if cut == 0:
            continue  # tr_alloc(0) has no window to pass
        result = rt.load_model(tiny_bytes[:cut])[0]
        if result != "Bounds":
            wrong.append((cut, result))
    assert wrong == []
    assert rt.call("tr_self_test") == 0, "instance still healthy after every rejection"


def test_preflight_rejects_a_context_that_does_not_fit(scalar_wasm: Path) -> None:
    rt = WasmRuntime(scalar_wasm, simd=False)
    code, model = rt.load_model(pack(PRESETS["small"], 7))
    assert code == "Ok"
    out = rt.call("tr_alloc", 16)
    assert rt.call("tr_preflight", model, 256, 2**63, out) == 0
    peak, steady = struct.unpack("<QQ", rt.read(out, 16))
    assert peak >= steady > 0
    assert rt.call("tr_preflight", model, 256, peak - 1, out) == 9  # OutOfMemory
    assert rt.call("tr_preflight", model, 257, 2**63, out) == 14  # ContextExceeded
