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
- REQUIRED_EXPORTS / THREADS_EXPORTS: what the loader calls (its own list, below), each
  checked to be an exported `tr_*` function of crates/wasm/src.

`python -m pipeline.jsconstants [--check]` (tests/js/loader/test_constants.py runs the check).
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


class JsConstantsError(TabledError):
    """The Rust sources no longer have the shape pipeline/jsconstants.py reads."""

    table: ClassVar[Mapping[str, str]] = {
        "jsconstants.unreadable": "restore the Rust source named in `where` from git",
        "jsconstants.source": "update pipeline/jsconstants.py to the Rust source's new shape",
        "jsconstants.exports": "add the exports to crates/wasm/src or drop them from the loader",
    }


class JsConstantsStale(CheckFailed):
    """The generated JS constants are older than the Rust sources."""

    error_id = "jsconstants.stale"
    default_hint = "python -m pipeline.jsconstants"


REPO_ROOT = Path(__file__).resolve().parent.parent
OUTPUT = Path(paths.JS_SOURCE_DIR / "constants.js")
LANES_RS = Path("crates/wasm/src/lib.rs")
KERNELS_RS = Path("crates/core/src/kernels/mod.rs")
CATEGORIES_RS = Path("crates/core/src/selftest/categories.rs")
QUANT_RS = Path("crates/core/src/quant.rs")
MODEL_RS = Path("crates/core/src/model.rs")
WASM_SRC = Path("crates/wasm/src")

# What the loader calls on every lane (ABI 1 plus the loader exports, CONTRACT.md §9), and on
# the threads lane besides. The loader's requirement, so it lives here; Rust must export each.
REQUIRED_EXPORTS = (
    "memory",
    "tr_abi_version",
    "tr_runtime_semantics",
    "tr_lane",
    "tr_alloc",
    "tr_free",
    "tr_model_load",
    "tr_model_prefix_bytes",
    "tr_preflight_header",
    "tr_session_new",
    "tr_prefill",
    "tr_decode",
    "tr_session_free",
    "tr_model_free",
    "tr_self_test_detail",
    "tr_self_test_detail_bytes",
    "tr_path_counters",
)
THREADS_EXPORTS = ("tr_atomics_self_test", "tr_worker_counters", "tr_pool_start")


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
            hint="update pipeline/jsconstants.py",
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


def check_exports(repo_root: Path) -> None:
    exported = set()
    for path in sorted((repo_root / WASM_SRC).glob("*.rs")):
        exported |= set(
            re.findall(r'pub (?:unsafe )?extern "C" fn (tr_\w+)', path.read_text(encoding="utf-8"))
        )
    missing = [
        n for n in (*REQUIRED_EXPORTS, *THREADS_EXPORTS) if n != "memory" and n not in exported
    ]
    if missing:
        raise JsConstantsError(
            f"the loader needs exports the runtime does not have: {missing}",
            where=str(WASM_SRC),
            error_id="jsconstants.exports",
        )


def _list(values: tuple[str, ...] | list[str]) -> str:
    return "Object.freeze([" + ", ".join(json.dumps(v).replace('"', "'") for v in values) + "])"


def _map(values: dict[int, str]) -> str:
    return "Object.freeze({ " + ", ".join(f"{k}: '{v}'" for k, v in values.items()) + " })"


def render(repo_root: Path = REPO_ROOT) -> str:
    check_exports(repo_root)
    return f"""// GENERATED by `python -m pipeline.jsconstants` from the Rust sources named below.
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
/** Exports every lane must have for this loader (pipeline/jsconstants.py; each one checked). */
export const REQUIRED_EXPORTS = {_list(REQUIRED_EXPORTS)};
/** Exports the threads lane has besides. */
export const THREADS_EXPORTS = {_list(THREADS_EXPORTS)};
"""


def main(argv: list[str]) -> int:
    target = REPO_ROOT / OUTPUT
    text = render()
    if argv == ["--check"]:
        if target.read_text(encoding="utf-8") != text:
            raise JsConstantsStale(
                f"{OUTPUT} is stale", where=str(OUTPUT), hint="python -m pipeline.jsconstants"
            )
        return 0
    target.write_text(text, encoding="utf-8")
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
