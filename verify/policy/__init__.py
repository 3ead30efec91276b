"""Lane policies: JSON data in manifests/policy/, validated on load, held as frozen values.

The default folder is found from this file (verify/ sits next to manifests/ in the repo
and in an installed bundle verifier's source tree); callers may pass another folder.
An empty policy, an unknown lane field or a lane without checks fails closed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.errors import VerifyError
from verify.wasm import features
from verify.wasm.features import Proposal

SCHEMA = "tinyrustlm.lane-policy.v1"
DEFAULT_POLICY_DIR = Path(__file__).resolve().parents[2] / "manifests" / "policy"
WASM_LANES = ("scalar-wasm32", "simd128-wasm32", "simd128-threads-wasm32")
NATIVE_LANES = ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "x86_64-pc-windows-gnu")


class PolicyError(VerifyError):
    """A policy file that is missing, malformed or fails closed (empty, unknown field)."""


@dataclass(frozen=True, slots=True)
class AllowedImport:
    module: str
    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class MemoryRule:
    source: str  # "export": defined and exported; "import": imported as env.memory
    shared: bool
    fixed_size: bool  # initial == maximum
    growth: bool  # memory.grow allowed


@dataclass(frozen=True, slots=True)
class WasmPolicy:
    lane: str
    allowed: Proposal
    required: Proposal
    lower: Proposal | None  # wasm-tools must reject the module under this set
    required_exports: tuple[str, ...]
    optional_export_prefixes: tuple[str, ...]
    memory: MemoryRule
    allowed_imports: tuple[AllowedImport, ...]
    forbidden_custom_sections: tuple[str, ...]
    forbid_debug_sections: bool
    missing_target_features_is_empty_claim: bool  # False: an absent section is not judged
    allowed_path_prefixes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NativePolicy:
    lane: str
    format: str  # "ELF" or "PE"
    machine: str  # "x86_64" or "aarch64"
    allowed_libraries: tuple[str, ...]  # exact names, compared case-insensitively for PE
    max_glibc: tuple[int, ...] | None
    pie: bool
    nx: bool
    full_relro: bool
    build_id: bool
    pe_timestamp: int | None
    pe_debug_directory: bool  # False: no debug directory entries allowed
    pe_dynamic_base: bool
    pe_high_entropy_va: bool
    forbid_debug_sections: bool
    forbidden_isa_groups: tuple[str, ...]  # capstone group names beyond the baseline ISA
    fma_mnemonics: tuple[str, ...]  # mnemonic prefixes of fused multiply-add
    allowed_path_prefixes: tuple[str, ...]


def _fields(obj: Any, expected: dict[str, type | tuple[type, ...]], where: str) -> dict[str, Any]:
    """Exactly the expected keys, each of the expected JSON type."""
    if not isinstance(obj, dict):
        raise PolicyError(f"{where}: expected an object")
    unknown = sorted(set(obj) - set(expected))
    missing = sorted(set(expected) - set(obj))
    if unknown:
        raise PolicyError(f"{where}: unknown field(s) {unknown}")
    if missing:
        raise PolicyError(f"{where}: missing field(s) {missing}")
    for key, kind in expected.items():
        value = obj[key]
        if isinstance(value, bool) and kind is int:
            raise PolicyError(f"{where}.{key}: expected a number")
        if not isinstance(value, kind):
            raise PolicyError(f"{where}.{key}: expected {kind}, got {type(value).__name__}")
        if isinstance(value, list) and not all(
            isinstance(v, str | dict) for v in value
        ):  # lists hold names (or import objects)
            raise PolicyError(f"{where}.{key}: expected a list of strings")
    return dict(obj)


def _strings(value: list[Any], where: str) -> tuple[str, ...]:
    if not all(isinstance(v, str) and v for v in value):
        raise PolicyError(f"{where}: expected non-empty strings")
    if len(set(value)) != len(value):
        raise PolicyError(f"{where}: repeated entries")
    return tuple(value)


def _proposals(value: list[Any], where: str) -> Proposal:
    try:
        return features.from_names(list(_strings(value, where)), where)
    except ValueError as exc:
        raise PolicyError(str(exc)) from None


def _read(path: Path, fmt: str) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"cannot read policy: {exc.strerror}", where=str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"policy is not valid JSON: {exc}", where=str(path)) from None
    top = _fields(doc, {"schema": str, "format": str, "common": dict, "lanes": dict}, str(path))
    if top["schema"] != SCHEMA:
        raise PolicyError(f"{path}: schema is {top['schema']!r}, expected {SCHEMA!r}")
    if top["format"] != fmt:
        raise PolicyError(f"{path}: format is {top['format']!r}, expected {fmt!r}")
    if not top["lanes"]:
        raise PolicyError(f"{path}: no lanes: an empty policy allows nothing")
    for lane, body in top["lanes"].items():
        if not isinstance(body, dict) or not body:
            raise PolicyError(f"{path}: lane {lane!r} has no checks")
    return top["common"], top["lanes"]


_WASM_COMMON: dict[str, type | tuple[type, ...]] = {
    "required_exports": list,
    "optional_export_prefixes": list,
    "forbidden_custom_sections": list,
    "forbid_debug_sections": bool,
    "missing_target_features_is_empty_claim": bool,
    "allowed_path_prefixes": list,
}
_WASM_LANE: dict[str, type | tuple[type, ...]] = {
    "allowed_proposals": list,
    "required_proposals": list,
    "lower_proposals": (list, type(None)),
    "extra_required_exports": list,
    "memory": dict,
    "allowed_imports": list,
}
_MEMORY: dict[str, type | tuple[type, ...]] = {
    "source": str,
    "shared": bool,
    "fixed_size": bool,
    "growth": bool,
}
_IMPORT: dict[str, type | tuple[type, ...]] = {"module": str, "name": str, "kind": str}


def load_wasm_policies(policy_dir: Path | None = None) -> dict[str, WasmPolicy]:
    path = (policy_dir or DEFAULT_POLICY_DIR) / "wasm.json"
    common_raw, lanes_raw = _read(path, "wasm")
    common = _fields(common_raw, _WASM_COMMON, f"{path}: common")
    out: dict[str, WasmPolicy] = {}
    for lane, raw in lanes_raw.items():
        where = f"{path}: lanes.{lane}"
        body = _fields(raw, _WASM_LANE, where)
        mem = _fields(body["memory"], _MEMORY, f"{where}.memory")
        if mem["source"] not in ("export", "import"):
            raise PolicyError(f"{where}.memory.source: must be 'export' or 'import'")
        allowed = _proposals(body["allowed_proposals"], f"{where}.allowed_proposals")
        required = _proposals(body["required_proposals"], f"{where}.required_proposals")
        if required & ~allowed:
            raise PolicyError(f"{where}: required proposals are not all allowed")
        lower = body["lower_proposals"]
        imports = tuple(
            AllowedImport(**_fields(i, _IMPORT, f"{where}.allowed_imports"))
            for i in body["allowed_imports"]
        )
        exports = _strings(
            common["required_exports"] + body["extra_required_exports"], f"{where} exports"
        )
        out[lane] = WasmPolicy(
            lane=lane,
            allowed=allowed,
            required=required,
            lower=None if lower is None else _proposals(lower, f"{where}.lower_proposals"),
            required_exports=exports,
            optional_export_prefixes=_strings(common["optional_export_prefixes"], where),
            memory=MemoryRule(**mem),
            allowed_imports=imports,
            forbidden_custom_sections=_strings(common["forbidden_custom_sections"], where),
            forbid_debug_sections=common["forbid_debug_sections"],
            missing_target_features_is_empty_claim=common["missing_target_features_is_empty_claim"],
            allowed_path_prefixes=_strings(common["allowed_path_prefixes"], where),
        )
    return out


_NATIVE_COMMON: dict[str, type | tuple[type, ...]] = {
    "forbid_debug_sections": bool,
    "allowed_path_prefixes": list,
}
_NATIVE_LANE: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "machine": str,
    "allowed_libraries": list,
    "max_glibc": (str, type(None)),
    "pie": bool,
    "nx": bool,
    "full_relro": bool,
    "build_id": bool,
    "pe_timestamp": (int, type(None)),
    "pe_debug_directory": bool,
    "pe_dynamic_base": bool,
    "pe_high_entropy_va": bool,
    "forbidden_isa_groups": list,
    "fma_mnemonics": list,
    "extra_allowed_path_prefixes": list,
}


def load_native_policies(policy_dir: Path | None = None) -> dict[str, NativePolicy]:
    path = (policy_dir or DEFAULT_POLICY_DIR) / "native.json"
    common_raw, lanes_raw = _read(path, "native")
    common = _fields(common_raw, _NATIVE_COMMON, f"{path}: common")
    out: dict[str, NativePolicy] = {}
    for lane, raw in lanes_raw.items():
        where = f"{path}: lanes.{lane}"
        body = _fields(raw, _NATIVE_LANE, where)
        if body["format"] not in ("ELF", "PE") or body["machine"] not in ("x86_64", "aarch64"):
            raise PolicyError(f"{where}: format must be ELF/PE and machine x86_64/aarch64")
        glibc = body["max_glibc"]
        try:
            max_glibc = None if glibc is None else tuple(int(p) for p in glibc.split("."))
        except ValueError:
            raise PolicyError(f"{where}.max_glibc: not a version: {glibc!r}") from None
        prefixes = common["allowed_path_prefixes"] + body["extra_allowed_path_prefixes"]
        out[lane] = NativePolicy(
            lane=lane,
            format=body["format"],
            machine=body["machine"],
            allowed_libraries=_strings(body["allowed_libraries"], f"{where}.allowed_libraries"),
            max_glibc=max_glibc,
            pie=body["pie"],
            nx=body["nx"],
            full_relro=body["full_relro"],
            build_id=body["build_id"],
            pe_timestamp=body["pe_timestamp"],
            pe_debug_directory=body["pe_debug_directory"],
            pe_dynamic_base=body["pe_dynamic_base"],
            pe_high_entropy_va=body["pe_high_entropy_va"],
            forbid_debug_sections=common["forbid_debug_sections"],
            forbidden_isa_groups=_strings(body["forbidden_isa_groups"], where),
            fma_mnemonics=_strings(body["fma_mnemonics"], where),
            allowed_path_prefixes=_strings(prefixes, where),
        )
    return out
