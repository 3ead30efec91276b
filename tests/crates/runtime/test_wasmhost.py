"""pipeline/wasmhost.py, the one Python host of the `tr_*` ABI: its tables agree with the Rust
and JavaScript sides, each lane's engine accepts exactly the lane's features, and a module
that breaks the host's expectations is a HostError."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
import wasmtime

from pipeline import wasmhost
from pipeline.js.probes import probe_sources
from pipeline.wasmhost import HostError, SessionConfig, WasmHost

REPO = Path(__file__).resolve().parents[3]
RESULT_RS = REPO / "crates/core/src/result.rs"
ABI_JS = REPO / "crates/wasm/js/abi.js"
JS_FIELD = {"BigUint64": "Q", "Uint32": "I", "Float32": "f"}


def test_result_names_are_the_rust_table() -> None:
    rust = re.findall(r'\(TrResult::(\w+), "(\w+)"\)', RESULT_RS.read_text())
    assert len(rust) > 20 and all(variant == name for variant, name in rust)
    assert tuple(name for _variant, name in rust) == wasmhost.RESULT_NAMES


def _js_layout(function: str, accessor: str) -> str:
    """The struct format of the record abi.js's `function` reads or writes (by offset)."""
    text = ABI_JS.read_text()
    body = re.search(rf"function {function}\(.*?\n}}\n", text, re.DOTALL)
    assert body, f"abi.js has no function {function}"
    fields = re.findall(rf"\.{accessor}(BigUint64|Uint32|Float32)\((\d+)", body.group(0))
    return "<" + "".join(JS_FIELD[kind] for kind, _at in sorted(fields, key=lambda f: int(f[1])))


@pytest.mark.parametrize(
    ("function", "accessor", "record"),
    [
        ("writeSessionConfig", "set", wasmhost.SESSION_CONFIG),
        ("decode", "get", wasmhost.DECODE_STEP),
        ("pathCounters", "get", wasmhost.PATH_COUNTERS),
    ],
    ids=["session-config", "decode-step", "path-counters"],
)
def test_records_are_laid_out_as_abi_js_has_them(
    function: str, accessor: str, record: struct.Struct
) -> None:
    assert _js_layout(function, accessor) == record.format


def test_session_config_defaults_are_greedy_at_the_models_context() -> None:
    seed, stream, temp, top_k, top_p, penalty, context, reserved = wasmhost.SESSION_CONFIG.unpack(
        SessionConfig().record()
    )
    assert (seed, stream, temp, top_k, top_p, penalty, context, reserved) == (
        0, 0, 0.0, 0, 1.0, 1.0, 0, 0,
    )  # fmt: skip
    assert len(SessionConfig().record()) == 40


def _probe(tmp_path: Path, name: str) -> Path:
    """A probe of the loader's, assembled (the relaxed-SIMD one is generated from the policy)."""
    [source] = [s for s in probe_sources(REPO) if s.id == name]
    path = tmp_path / f"{name}.wasm"
    path.write_bytes(wasmtime.wat2wasm(source.wat()))
    return path


# (probe of crates/wasm/probes, accepted by the MVP lane's engine, by the SIMD lane's engine)
ENGINES = [
    ("simd128", False, True),
    ("relaxed-simd", False, False),
    ("threads", False, False),
    ("memory64", False, False),
    ("exceptions", False, False),
]


@pytest.mark.parametrize(
    ("probe", "mvp", "simd"), [e for e in ENGINES], ids=[e[0] for e in ENGINES]
)
def test_each_lanes_engine_accepts_exactly_its_features(
    tmp_path: Path, probe: str, mvp: bool, simd: bool
) -> None:
    module = _probe(tmp_path, probe)
    for simd_lane, accepted in ((False, mvp), (True, simd)):
        try:
            WasmHost(module, simd=simd_lane)
            got = True
        except wasmtime.WasmtimeError:
            got = False
        assert got == accepted, f"{probe} in the {'SIMD' if simd_lane else 'MVP'} lane's engine"


def test_a_missing_export_or_memory_is_a_host_error(tmp_path: Path) -> None:
    module = _probe(tmp_path, "simd128")  # a function, no exports, no memory
    host = WasmHost(module, simd=True)
    assert host.exports == frozenset()
    with pytest.raises(HostError, match="exports no function tr_self_test"):
        host.self_test()
    with pytest.raises(HostError, match="exports no memory"):
        host.read(0, 1)


@pytest.mark.integration
def test_windows_are_freed_and_a_failed_alloc_is_a_host_error(scalar_wasm: Path) -> None:
    host = WasmHost(scalar_wasm, simd=False)
    code, _model = host.load_model(b"not a model")
    assert wasmhost.RESULT_NAMES[code] == "Bounds"
    assert host.live_windows == 0, "every window of a call is freed"
    with pytest.raises(HostError, match=r"tr_alloc\(4294967295\) failed"):
        host.alloc(0xFFFF_FFFF)
