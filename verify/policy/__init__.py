"""Lane policies: JSON data shipped beside this module, validated on load, held as frozen values.

The files (`wasm.json`, `native.json`) are package data, so an installed `tinyrustlm-verify`
finds them (auditwheel ships its manylinux policy the same way); callers may pass another
folder. Their format is `verify.formats.lane_policy` (`tinyrustlm.lane-policy.v1`). An empty
policy, an unknown field or a lane without checks fails closed. Which lanes exist is read
from these files, never written in code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import ValidationError

from verify.canonical import MalformedJson, parse_json
from verify.errors import VerifyError
from verify.formats.lane_policy import LanePolicy, NativePolicyFile, WasmPolicyFile
from verify.inputs import read_regular_file
from verify.wasm import features
from verify.wasm.features import Proposal

DEFAULT_POLICY_DIR = Path(__file__).resolve().parent
WASM_POLICY = "wasm.json"
NATIVE_POLICY = "native.json"
POLICY_FILES = (WASM_POLICY, NATIVE_POLICY)


class PolicyError(VerifyError):
    """A policy file that is missing, malformed or fails closed (empty, unknown field)."""

    error_id = "policy.invalid"
    default_hint = (
        "restore verify/policy/ from the release (or fix the --policy-dir file named), or pick "
        "a lane the policy defines"
    )


@dataclass(frozen=True, slots=True)
class AllowedImport:
    module: str
    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class MemoryRule:
    source: str  # "export": defined and exported; "import": imported as env.memory
    shared: bool
    initial_pages_at_most: int | None  # the declared minimum's bound, in pages (None: any)
    maximum_pages: int | None  # the declared maximum, exactly, in pages (None: any, or none)
    growth: bool  # memory.grow allowed


@dataclass(frozen=True, slots=True)
class WasmPolicy:
    lane: str
    allowed: Proposal
    required: Proposal
    lower: Proposal | None  # wasm-tools must reject the module under this set
    required_exports: tuple[str, ...]  # function exports
    required_globals: tuple[str, ...]  # global exports
    optional_export_prefixes: tuple[str, ...]
    memory: MemoryRule
    allowed_imports: tuple[AllowedImport, ...]
    forbidden_custom_sections: tuple[str, ...]
    forbid_debug_sections: bool
    missing_target_features_is_empty_claim: bool  # False: an absent section is not judged
    allowed_path_prefixes: tuple[str, ...]
    relaxed_instructions: tuple[str, ...] = ()  # admitted relaxed-SIMD instructions, by name


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
    forbid_parse_anomalies: bool  # lief's warnings, or a file shorter than its headers claim
    forbidden_isa_groups: tuple[str, ...]  # capstone group names beyond the baseline ISA
    baseline_encodings: tuple[str, ...]  # mnemonics of those groups every baseline CPU runs
    fma_mnemonics: tuple[str, ...]  # mnemonic prefixes of fused multiply-add
    allowed_path_prefixes: tuple[str, ...]


_File = TypeVar("_File", WasmPolicyFile, NativePolicyFile)


def _error_text(exc: ValidationError) -> str:
    """The first problem, named by its field path, in words a policy author can act on."""
    first = exc.errors()[0]
    loc = ".".join(str(part) for part in first["loc"])
    kind, msg = first["type"], first["msg"].removeprefix("Value error, ")
    if kind == "extra_forbidden":
        return f"unknown field {loc!r}"
    if kind == "missing":
        return f"missing field {loc!r}"
    return f"field {loc!r}: {msg.replace('Input should be', 'expected')}" if loc else msg


def _read_policy_file(path: Path, expected: type[_File]) -> tuple[_File, str]:
    """The one reader of a policy file: its bytes read once, hashed, then parsed as JSON and
    as the `tinyrustlm.lane-policy.v1` model. Returns the model and the SHA-256 of exactly
    the bytes it was parsed from."""
    try:
        data = read_regular_file(path, "policy")
        doc = parse_json(data, str(path))
    except MalformedJson as exc:  # not JSON, too large or too deep
        raise PolicyError(
            f"policy is not valid JSON: {exc.message} ({exc.error_id})", where=str(path)
        ) from None
    except VerifyError as exc:  # unreadable, not a regular file, too large
        raise PolicyError(
            f"cannot read policy: {exc.message} ({exc.error_id})", where=str(path)
        ) from None
    try:
        policy = LanePolicy.model_validate(doc).root
    except ValidationError as exc:
        raise PolicyError(_error_text(exc), where=str(path)) from None
    if not isinstance(policy, expected):
        raise PolicyError(f"format is {policy.format!r}: this is not {path.name}", where=str(path))
    return policy, hashlib.sha256(data).hexdigest()


def _wasm_lanes(doc: WasmPolicyFile) -> dict[str, WasmPolicy]:
    """Every Wasm lane's resolved policy (the file's `common` merged into each lane)."""
    c = doc.common
    return {
        lane: WasmPolicy(
            lane=lane,
            allowed=features.from_names(body.allowed_proposals, lane),
            required=features.from_names(body.required_proposals, lane),
            lower=(
                None
                if body.lower_proposals is None
                else features.from_names(body.lower_proposals, lane)
            ),
            required_exports=(*c.required_exports, *body.extra_required_exports),
            required_globals=tuple(body.extra_required_globals),
            optional_export_prefixes=tuple(c.optional_export_prefixes),
            memory=MemoryRule(
                body.memory.source,
                body.memory.shared,
                body.memory.initial_pages_at_most,
                body.memory.maximum_pages,
                body.memory.growth,
            ),
            allowed_imports=tuple(
                AllowedImport(i.module, i.name, i.kind) for i in body.allowed_imports
            ),
            forbidden_custom_sections=tuple(c.forbidden_custom_sections),
            forbid_debug_sections=c.forbid_debug_sections,
            missing_target_features_is_empty_claim=c.missing_target_features_is_empty_claim,
            allowed_path_prefixes=tuple(c.allowed_path_prefixes),
            relaxed_instructions=tuple(body.relaxed_instructions),
        )
        for lane, body in doc.lanes.items()
    }


def _native_lanes(doc: NativePolicyFile) -> dict[str, NativePolicy]:
    """Every native lane's resolved policy."""
    c = doc.common
    return {
        lane: NativePolicy(
            lane=lane,
            format=body.format,
            machine=body.machine,
            allowed_libraries=tuple(body.allowed_libraries),
            max_glibc=(
                None if body.max_glibc is None else tuple(int(p) for p in body.max_glibc.split("."))
            ),
            pie=body.pie,
            nx=body.nx,
            full_relro=body.full_relro,
            build_id=body.build_id,
            pe_timestamp=body.pe_timestamp,
            pe_debug_directory=body.pe_debug_directory,
            pe_dynamic_base=body.pe_dynamic_base,
            pe_high_entropy_va=body.pe_high_entropy_va,
            forbid_debug_sections=c.forbid_debug_sections,
            forbid_parse_anomalies=c.forbid_parse_anomalies,
            forbidden_isa_groups=tuple(body.forbidden_isa_groups),
            baseline_encodings=tuple(sorted(body.baseline_encodings)),
            fma_mnemonics=tuple(body.fma_mnemonics),
            allowed_path_prefixes=(*c.allowed_path_prefixes, *body.extra_allowed_path_prefixes),
        )
        for lane, body in doc.lanes.items()
    }


LaneKind = Literal["wasm", "native"]


@dataclass(frozen=True, slots=True)
class Policies:
    """Both lane policy files, each read and parsed once (`load_policies`); a run of the
    inspector passes this one value down instead of re-reading the files per artifact."""

    wasm: Mapping[str, WasmPolicy]
    native: Mapping[str, NativePolicy]
    sha256: Mapping[str, str]  # file name -> SHA-256 of exactly the bytes that were parsed

    def kinds(self) -> dict[str, LaneKind]:
        """Lane id -> "wasm" or "native", for every lane the policy files name."""
        return {**dict.fromkeys(self.wasm, "wasm"), **dict.fromkeys(self.native, "native")}


def load_policies(policy_dir: Path | None = None) -> Policies:
    """Both policy files of `policy_dir` (default: the ones shipped with verify), read once."""
    folder = policy_dir or DEFAULT_POLICY_DIR
    wasm, wasm_sha = _read_policy_file(folder / WASM_POLICY, WasmPolicyFile)
    native, native_sha = _read_policy_file(folder / NATIVE_POLICY, NativePolicyFile)
    return Policies(
        _wasm_lanes(wasm), _native_lanes(native), {WASM_POLICY: wasm_sha, NATIVE_POLICY: native_sha}
    )


def load_wasm_policies(policy_dir: Path | None = None) -> dict[str, WasmPolicy]:
    """Every Wasm lane's resolved policy (wasm.json alone)."""
    folder = policy_dir or DEFAULT_POLICY_DIR
    return _wasm_lanes(_read_policy_file(folder / WASM_POLICY, WasmPolicyFile)[0])


def load_native_policies(policy_dir: Path | None = None) -> dict[str, NativePolicy]:
    """Every native lane's resolved policy (native.json alone)."""
    folder = policy_dir or DEFAULT_POLICY_DIR
    return _native_lanes(_read_policy_file(folder / NATIVE_POLICY, NativePolicyFile)[0])


def lane_kinds(policy_dir: Path | None = None) -> dict[str, LaneKind]:
    """Lane id -> "wasm" or "native", for every lane the policy files name."""
    return load_policies(policy_dir).kinds()
