"""Generate the loader's constants shared with Rust (crates/wasm/js/constants.js) from their one
source each, so the JS can never drift from the runtime:

- KERNEL_SETS: `tr_lane()` id -> kernel set, from the `LANE_*` ids (crates/wasm/src/lib.rs)
  and the kernel set names of `KERNEL_SET` (crates/core/src/kernels/mod.rs): lane `LANE_X_Y`
  runs kernel set `x-y-v1`;
- KERNEL_SETS_INT8: the same lanes' kernel sets of the integer tier (`KERNEL_SET_INT8`, the
  same file): lane `LANE_X_Y` runs `x-y-int8-v1` for a format-v2 model (CONTRACT.md §10);
- MODEL_MAGIC, MODEL_TIERS: a model file's magic, and its format_version -> kernel tier name
  (crates/core/src/model.rs: `MAGIC`, the `FORMAT_VERSION*` constants, `Tier::from_version`
  and `Tier::name`);
- CATEGORIES: the self-test category names by id (crates/core/src/selftest/categories.rs NAMES);
- LAYOUTS: model layout names by id (crates/core/src/quant.rs LAYOUTS);
- REQUIRED_EXPORTS / THREADS_EXPORTS: what the loader checks a lane exports before it calls
  anything, from the lane policy (verify/policy/wasm.json, the one list of what a lane must
  export, so a bundle `verify` passes is one the loader accepts); each `tr_*` one checked to
  be an exported function of crates/wasm/src;
- KV_LAYOUT_VERSION, NORMALIZATION_VERSION, TOKENIZER_BYTES: the fixed fields of the KV cache
  identity (crates/core/src/session/reuse.rs, CONTRACT.md §11); the loader hashes
  TOKENIZER_BYTES for `tokenizer_sha256`;
- FEATURE_PROBES: a manifest feature name (LLVM's, verify/wasm/features.py) -> the probe
  (crates/wasm/probes/<id>.wat) that must validate for it, or null for a feature of the lowest
  lane (the lane policy's lane with no lower set: every engine that runs anything has it).

`python -m pipeline.js.constants [--check]` (tests/js/loader/test_constants.py runs the check).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pipeline import paths
from pipeline.errors import CheckFailed, TabledError
from pipeline.js.probes import probe_sources
from verify.policy import DEFAULT_POLICY_DIR, WASM_POLICY, WasmPolicy, load_wasm_policies
from verify.wasm.features import NONE, PROPOSAL_NAMES


class JsConstantsError(TabledError):
    """The Rust sources no longer have the shape pipeline/js/constants.py reads."""

    table: ClassVar[Mapping[str, str]] = {
        "jsconstants.unreadable": "restore the Rust source named in `where` from git",
        "jsconstants.source": "update pipeline/js/constants.py to the Rust source's new shape",
        "jsconstants.exports": "add the exports to crates/wasm/src or drop them from the policy",
        "jsconstants.policy": (
            "keep verify/policy/wasm.json within what the loader can check: the same exports "
            "on every lane without shared memory (which exports it), one set more on the "
            "shared-memory lanes (which import it), a probe for every feature a lane allows"
        ),
    }


class JsConstantsStale(CheckFailed):
    """The generated JS constants are older than the Rust sources."""

    error_id = "jsconstants.stale"
    default_hint = "python -m pipeline.js.constants"


REPO_ROOT = Path(__file__).resolve().parents[2]
OUTPUT = Path(paths.JS_SOURCE_DIR / "constants.js")
LANES_RS = Path("crates/wasm/src/lib.rs")
KERNELS_RS = Path("crates/core/src/kernels/mod.rs")
CATEGORIES_RS = Path("crates/core/src/selftest/categories.rs")
QUANT_RS = Path("crates/core/src/quant.rs")
MODEL_RS = Path("crates/core/src/model.rs")
REUSE_RS = Path("crates/core/src/session/reuse.rs")
WASM_SRC = Path("crates/wasm/src")

POLICY = DEFAULT_POLICY_DIR / WASM_POLICY
POLICY_NAME = f"verify/policy/{WASM_POLICY}"


def _read(repo_root: Path, rel: Path) -> str:
    try:
        return (repo_root / rel).read_text(encoding="utf-8")
    except OSError as exc:
        raise JsConstantsError(
            f"cannot read {rel}: {exc.strerror}", where=str(rel), error_id="jsconstants.unreadable"
        ) from exc


def _one(pattern: str, text: str, where: Path, what: str) -> re.Match[str]:
    found = re.search(pattern, text, re.S)
    if found is None:
        raise JsConstantsError(
            f"{what} not found",
            where=str(where),
            hint="update pipeline/js/constants.py",
            error_id="jsconstants.source",
        )
    return found


def kernel_sets(repo_root: Path, const: str = "KERNEL_SET", suffix: str = "v1") -> list[str]:
    """`tr_lane()` id -> the name of lane `LANE_X_Y`'s kernel set `x-y-SUFFIX` in `const`."""
    lanes = {
        name: int(value)
        for name, value in re.findall(
            r"pub const LANE_([A-Z0-9_]+): u32 = (\d+);", _read(repo_root, LANES_RS)
        )
    }
    body = _one(
        rf"pub const {const}: &str = (.*?);\n",
        _read(repo_root, KERNELS_RS),
        KERNELS_RS,
        const,
    ).group(1)
    names = set(re.findall(r'"([a-z0-9-]+-v\d+)"', body))  # not the cfg feature names
    out: list[str] = [""] * len(lanes)
    for lane, lane_id in lanes.items():
        name = f"{lane.lower().replace('_', '-')}-{suffix}"
        if name not in names or not 0 <= lane_id < len(lanes):
            raise JsConstantsError(
                f"lane LANE_{lane} = {lane_id} has no kernel set {name!r} "
                f"in {const} {sorted(names)}",
                where=str(KERNELS_RS),
                error_id="jsconstants.source",
            )
        out[lane_id] = name
    if set(out) != names:
        raise JsConstantsError(
            f"{const} names {sorted(names - set(out))} belong to no LANE_* id",
            where=str(LANES_RS),
            error_id="jsconstants.source",
        )
    return out


def kv_identity(repo_root: Path) -> tuple[int, int, str]:
    """(KV_LAYOUT_VERSION, NORMALIZATION_VERSION, TOKENIZER_BYTES) of the cache identity."""
    text = _read(repo_root, REUSE_RS)
    layout = _one(r"pub const KV_LAYOUT_VERSION: u32 = (\d+);", text, REUSE_RS, "KV_LAYOUT_VERSION")
    norm = _one(
        r"pub const NORMALIZATION_VERSION: u32 = (\d+);", text, REUSE_RS, "NORMALIZATION_VERSION"
    )
    tok = _one(
        r'pub const TOKENIZER_BYTES: &str =\s*"([^"\\]*(?:\\n[^"\\]*)*)";',
        text,
        REUSE_RS,
        "TOKENIZER_BYTES",
    )
    return int(layout.group(1)), int(norm.group(1)), tok.group(1).replace("\\n", "\n")


def model_magic(repo_root: Path) -> str:
    return _one(
        r'pub const MAGIC: \[u8; 8\] = \*b"([A-Z]{8})";',
        _read(repo_root, MODEL_RS),
        MODEL_RS,
        "MAGIC",
    ).group(1)


def model_tiers(repo_root: Path) -> dict[int, str]:
    """format_version -> tier name: `Tier::from_version`'s arms over the `FORMAT_VERSION*`
    constants, each tier named by `Tier::name`."""
    text = _read(repo_root, MODEL_RS)
    versions = {
        name: int(value)
        for name, value in re.findall(r"pub const (FORMAT_VERSION\w*): u32 = (\d+);", text)
    }
    arms = _one(
        r"fn from_version\(version: u32\) -> TrReturn<Tier> \{(.*?)\n    \}",
        text,
        MODEL_RS,
        "Tier::from_version",
    ).group(1)
    names_body = _one(
        r"fn name\(self\) -> &'static str \{(.*?)\n    \}", text, MODEL_RS, "Tier::name"
    ).group(1)
    names = dict(re.findall(r'Tier::(\w+) => "([a-z0-9]+)"', names_body))
    out: dict[int, str] = {}
    for const, tier in re.findall(r"(FORMAT_VERSION\w*) => Ok\(Tier::(\w+)\)", arms):
        if const not in versions or tier not in names:
            raise JsConstantsError(
                f"Tier::from_version maps {const} to Tier::{tier}: no such constant or name",
                where=str(MODEL_RS),
                error_id="jsconstants.source",
            )
        out[versions[const]] = names[tier]
    if not out or sorted(out.values()) != sorted(names.values()):
        raise JsConstantsError(
            f"Tier::from_version {out} does not name every tier of Tier::name {names}",
            where=str(MODEL_RS),
            error_id="jsconstants.source",
        )
    return dict(sorted(out.items()))


def categories(repo_root: Path) -> list[str]:
    body = _one(
        r"pub const NAMES: \[&str; \d+\] = \[(.*?)\];",
        _read(repo_root, CATEGORIES_RS),
        CATEGORIES_RS,
        "NAMES",
    ).group(1)
    return re.findall(r'"([a-z0-9_]+)"', body)


def layouts(repo_root: Path) -> list[str]:
    body = _one(
        r"pub const LAYOUTS: \[.*?\] =\s*\[(.*?)\];",
        _read(repo_root, QUANT_RS),
        QUANT_RS,
        "LAYOUTS",
    ).group(1)
    rows = sorted(
        (int(i), name) for i, name in re.findall(r'\((\d+), Layout::\w+, "([a-z0-9-]+)"\)', body)
    )
    if [i for i, _ in rows] != list(range(len(rows))):
        raise JsConstantsError(
            "layout ids are not 0..n-1", where=str(QUANT_RS), error_id="jsconstants.source"
        )
    return [name for _, name in rows]


def _policy_error(message: str) -> JsConstantsError:
    return JsConstantsError(message, where=str(POLICY), error_id="jsconstants.policy")


def loader_exports(policies: Mapping[str, WasmPolicy]) -> tuple[list[str], list[str]]:
    """(REQUIRED_EXPORTS, THREADS_EXPORTS): the exports the lane policy requires of every lane
    (with `memory`, which those lanes export), and those the shared-memory lanes require
    besides. The loader tells a threads lane by its shared memory (the manifest's
    requires_cross_origin_isolation) and skips `memory` there (the lane imports it), so the
    policy must fit that shape."""
    single = [p for p in policies.values() if not p.memory.shared]
    shared = [p for p in policies.values() if p.memory.shared]
    if not single:
        raise _policy_error("no lane without shared memory: the loader has no fallback lane")
    required = list(single[0].required_exports + single[0].required_globals)
    for p in single:
        if p.memory.source != "export" or set(p.required_exports + p.required_globals) != set(
            required
        ):
            raise _policy_error(
                f"lane {p.lane} does not export its memory, or requires other exports than "
                f"lane {single[0].lane}: the loader checks one list of every single-thread lane"
            )
    threads: list[str] = []
    for p in shared:
        extra = [n for n in (*p.required_exports, *p.required_globals) if n not in required]
        if p.memory.source != "import" or not set(required) <= set(
            p.required_exports + p.required_globals
        ):
            raise _policy_error(
                f"lane {p.lane} does not import its shared memory, or lacks an export every "
                "other lane has: the loader checks the common list of every lane"
            )
        if threads and set(extra) != set(threads):
            raise _policy_error(f"lane {p.lane} requires other threads exports than {threads}")
        threads = extra
    return ["memory", *required], threads


def feature_probes(
    policies: Mapping[str, WasmPolicy], probe_ids: list[str]
) -> dict[str, str | None]:
    """Manifest feature name (LLVM's; documents/assemble.py lists a lane's allowed proposals
    by it) -> the probe whose id is one of the proposal's names, or None for a proposal the
    lowest lane allows (no probe: every engine that runs a lane has it)."""
    baseline = NONE
    for p in policies.values():
        if p.lower is None:
            baseline |= p.allowed
    out: dict[str, str | None] = {}
    for proposal, names in PROPOSAL_NAMES.items():
        feature = names[2]
        if not feature:
            continue  # no manifest name: never a required feature
        probe = next((i for i in probe_ids if i in names), None)
        if proposal & baseline:
            out[feature] = None
        elif probe is not None:
            out[feature] = probe
        elif any(proposal & p.allowed for p in policies.values()):
            raise _policy_error(
                f"a lane allows {feature}, but no probe (crates/wasm/probes/) is named for it: "
                "the loader could never choose that lane"
            )
    return out


def check_exports(repo_root: Path, names: list[str]) -> None:
    exported = set()
    for path in sorted((repo_root / WASM_SRC).glob("*.rs")):
        exported |= set(
            re.findall(r'pub (?:unsafe )?extern "C" fn (tr_\w+)', path.read_text(encoding="utf-8"))
        )
    # `memory` and the `__*` exports are the linker's (manifests/lanes.toml --export=...)
    missing = [n for n in names if n.startswith("tr_") and n not in exported]
    if missing:
        raise JsConstantsError(
            f"the lane policy requires exports the runtime does not have: {missing}",
            where=str(WASM_SRC),
            error_id="jsconstants.exports",
        )


def _js_string(value: str) -> str:
    """A single-quoted JS string literal of `value` (backslash, quote and newline escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _list(values: tuple[str, ...] | list[str]) -> str:
    return "Object.freeze([" + ", ".join(json.dumps(v).replace('"', "'") for v in values) + "])"


def _map(values: Mapping[int, str] | Mapping[str, str | None]) -> str:
    def key(k: int | str) -> str:
        return str(k) if isinstance(k, int) or re.fullmatch(r"[a-z][a-z0-9]*", k) else f"'{k}'"

    def value(v: str | None) -> str:
        return "null" if v is None else f"'{v}'"

    return (
        "Object.freeze({ " + ", ".join(f"{key(k)}: {value(v)}" for k, v in values.items()) + " })"
    )


def render(repo_root: Path = REPO_ROOT, policies: Mapping[str, WasmPolicy] | None = None) -> str:
    policies = load_wasm_policies() if policies is None else policies
    required, threads = loader_exports(policies)
    check_exports(repo_root, [*required, *threads])
    probes = feature_probes(policies, [p.id for p in probe_sources(repo_root)])
    layout, norm, tokenizer = kv_identity(repo_root)
    return f"""// GENERATED by `python -m pipeline.js.constants` from the sources named below.
// Do not edit: tests/js/loader/test_constants.py regenerates this file and compares.

/** `tr_lane()` -> kernel set ({LANES_RS} LANE_*, {KERNELS_RS} KERNEL_SET). */
export const KERNEL_SETS = {_list(kernel_sets(repo_root))};
/** `tr_lane()` -> kernel set of the integer tier ({KERNELS_RS} KERNEL_SET_INT8). */
export const KERNEL_SETS_INT8 = {_list(kernel_sets(repo_root, "KERNEL_SET_INT8", "int8-v1"))};
/** A model file's first 8 bytes ({MODEL_RS} MAGIC). */
export const MODEL_MAGIC = '{model_magic(repo_root)}';
/** Model format_version -> kernel tier ({MODEL_RS} Tier::from_version, Tier::name). */
export const MODEL_TIERS = {_map(model_tiers(repo_root))};
/** Self-test category ids of `tr_self_test_detail` ({CATEGORIES_RS} NAMES). */
export const CATEGORIES = {_list(categories(repo_root))};
/** Model format v1 layout ids -> receipt names ({QUANT_RS} LAYOUTS). */
export const LAYOUTS = {_list(layouts(repo_root))};
/** Exports every lane must have ({POLICY_NAME}: common.required_exports, and `memory`). */
export const REQUIRED_EXPORTS = {_list(required)};
/** Exports the threads lane (shared memory) must have besides ({POLICY_NAME}). */
export const THREADS_EXPORTS = {_list(threads)};
/** KV cache identity: the K/V layout version ({REUSE_RS} KV_LAYOUT_VERSION). */
export const KV_LAYOUT_VERSION = {layout};
/** KV cache identity: tokenizer v1's normalization version ({REUSE_RS} NORMALIZATION_VERSION). */
export const NORMALIZATION_VERSION = {norm};
/** KV cache identity: tokenizer v1's defining bytes ({REUSE_RS} TOKENIZER_BYTES). */
export const TOKENIZER_BYTES = {_js_string(tokenizer)};
/** Manifest feature -> the probe that must validate for it (null: the lowest lane's). */
export const FEATURE_PROBES = {_map(probes)};
"""


def main(argv: list[str]) -> int:
    target = REPO_ROOT / OUTPUT
    text = render()
    if argv == ["--check"]:
        if target.read_text(encoding="utf-8") != text:
            raise JsConstantsStale(
                f"{OUTPUT} is stale", where=str(OUTPUT), hint="python -m pipeline.js.constants"
            )
        return 0
    target.write_text(text, encoding="utf-8")
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
