"""The resolved lane policies say exactly what the policy files say: every field of every lane,
read back from the raw JSON (the `common` block merged in), so no field is dropped, swapped
or defaulted on the way from file to check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verify.policy import (
    DEFAULT_POLICY_DIR,
    AllowedImport,
    MemoryRule,
    lane_kinds,
    load_native_policies,
    load_wasm_policies,
)
from verify.wasm import features


def _raw(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DEFAULT_POLICY_DIR / name).read_text())
    return doc


NATIVE = _raw("native.json")
WASM = _raw("wasm.json")


@pytest.mark.parametrize("lane", sorted(NATIVE["lanes"]))
def test_native_policy_fields(lane: str) -> None:
    body, common = NATIVE["lanes"][lane], NATIVE["common"]
    policy = load_native_policies()[lane]
    glibc = body["max_glibc"]
    assert {
        "lane": policy.lane,
        "format": policy.format,
        "machine": policy.machine,
        "allowed_libraries": list(policy.allowed_libraries),
        "max_glibc": policy.max_glibc,
        "pie": policy.pie,
        "nx": policy.nx,
        "full_relro": policy.full_relro,
        "build_id": policy.build_id,
        "pe_timestamp": policy.pe_timestamp,
        "pe_debug_directory": policy.pe_debug_directory,
        "pe_dynamic_base": policy.pe_dynamic_base,
        "pe_high_entropy_va": policy.pe_high_entropy_va,
        "forbid_debug_sections": policy.forbid_debug_sections,
        "forbid_parse_anomalies": policy.forbid_parse_anomalies,
        "forbidden_isa_groups": list(policy.forbidden_isa_groups),
        "fma_mnemonics": list(policy.fma_mnemonics),
        "allowed_path_prefixes": list(policy.allowed_path_prefixes),
    } == {
        "lane": lane,
        "format": body["format"],
        "machine": body["machine"],
        "allowed_libraries": body["allowed_libraries"],
        "max_glibc": None if glibc is None else tuple(int(p) for p in glibc.split(".")),
        **{k: body[k] for k in ("pie", "nx", "full_relro", "build_id", "pe_timestamp",
                                "pe_debug_directory", "pe_dynamic_base", "pe_high_entropy_va",
                                "forbidden_isa_groups", "fma_mnemonics")},
        "forbid_debug_sections": common["forbid_debug_sections"],
        "forbid_parse_anomalies": common["forbid_parse_anomalies"],
        "allowed_path_prefixes": common["allowed_path_prefixes"]
        + body.get("extra_allowed_path_prefixes", []),
    }  # fmt: skip


@pytest.mark.parametrize("lane", sorted(WASM["lanes"]))
def test_wasm_policy_fields(lane: str) -> None:
    body, common = WASM["lanes"][lane], WASM["common"]
    policy = load_wasm_policies()[lane]
    lower = body.get("lower_proposals")
    memory = body["memory"]
    assert policy.lane == lane
    assert policy.allowed == features.from_names(body["allowed_proposals"], lane)
    assert policy.required == features.from_names(body["required_proposals"], lane)
    assert policy.lower == (None if lower is None else features.from_names(lower, lane))
    assert list(policy.required_exports) == common["required_exports"] + body.get(
        "extra_required_exports", []
    )
    assert list(policy.required_globals) == body["extra_required_globals"]
    assert list(policy.optional_export_prefixes) == common["optional_export_prefixes"]
    assert policy.memory == MemoryRule(
        memory["source"],
        memory["shared"],
        memory["initial_pages_at_most"],
        memory["maximum_pages"],
        memory["growth"],
    )
    assert list(policy.allowed_imports) == [
        AllowedImport(i["module"], i["name"], i["kind"]) for i in body.get("allowed_imports", [])
    ]
    assert list(policy.forbidden_custom_sections) == common["forbidden_custom_sections"]
    assert policy.forbid_debug_sections == common["forbid_debug_sections"]
    assert (
        policy.missing_target_features_is_empty_claim
        == common["missing_target_features_is_empty_claim"]
    )
    assert list(policy.allowed_path_prefixes) == common["allowed_path_prefixes"]


def test_lane_kinds_name_every_lane_of_both_files() -> None:
    assert lane_kinds() == {
        **dict.fromkeys(WASM["lanes"], "wasm"),
        **dict.fromkeys(NATIVE["lanes"], "native"),
    }
    assert set(lane_kinds().values()) == {"wasm", "native"}


def test_the_lanes_differ_where_the_files_do() -> None:
    """The fields a swap could hide in take more than one value across the lanes."""
    native = load_native_policies().values()
    for field in ("format", "machine", "pe_dynamic_base", "pe_timestamp", "max_glibc"):
        assert len({getattr(p, field) for p in native}) > 1, field


def test_lane_kinds_read_the_given_folder(tmp_path: Path) -> None:
    native = dict(NATIVE, lanes=dict(list(NATIVE["lanes"].items())[:1]))
    wasm = dict(WASM, lanes=dict(list(WASM["lanes"].items())[:1]))
    (tmp_path / "native.json").write_text(json.dumps(native))
    (tmp_path / "wasm.json").write_text(json.dumps(wasm))
    assert lane_kinds(tmp_path) == {
        next(iter(WASM["lanes"])): "wasm",
        next(iter(NATIVE["lanes"])): "native",
    }
