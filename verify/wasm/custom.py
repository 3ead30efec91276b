"""Custom sections with a known layout: target_features, producers, name.

Unknown custom section names are recorded by the caller, never rejected; a known name
with a malformed payload is an error (strict on structure, tolerant of names).
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.wasm.reader import Reader

TARGET_FEATURE_PREFIXES = {0x2B: "+", 0x2D: "-", 0x3D: "="}


@dataclass(frozen=True, slots=True)
class TargetFeature:
    prefix: str  # "+" used, "-" must not be used, "=" required by every linked object
    name: str


@dataclass(frozen=True, slots=True)
class NameSection:
    module_name: str | None
    function_names: int  # how many functions are named
    local_names: int  # how many locals are named
    other_subsections: tuple[int, ...]  # ids of subsections we only skip
    strings: tuple[str, ...]  # every name, for the build-path check


def parse_target_features(r: Reader) -> tuple[TargetFeature, ...]:
    features: list[TargetFeature] = []
    seen: set[str] = set()
    for _ in range(r.count("target_features")):
        at = r.pos
        prefix = r.byte("target_features prefix")
        if prefix not in TARGET_FEATURE_PREFIXES:
            raise r.error(f"target_features: invalid prefix 0x{prefix:02x}", at)
        name = r.name("target_features name")
        if name in seen:
            raise r.error(f"target_features: feature {name!r} listed twice", at)
        seen.add(name)
        features.append(TargetFeature(TARGET_FEATURE_PREFIXES[prefix], name))
    r.expect_end("target_features section")
    return tuple(features)


def parse_producers(r: Reader) -> tuple[tuple[str, str, str], ...]:
    """(field, name, version) rows, e.g. ("processed-by", "rustc", "1.63.0")."""
    rows: list[tuple[str, str, str]] = []
    fields: set[str] = set()
    for _ in range(r.count("producers fields")):
        at = r.pos
        field = r.name("producers field name")
        if field in fields:
            raise r.error(f"producers: field {field!r} listed twice", at)
        fields.add(field)
        for _ in range(r.count(f"producers {field} values")):
            rows.append((field, r.name("producers value name"), r.name("producers version")))
    r.expect_end("producers section")
    return tuple(rows)


def _name_map(r: Reader, strings: list[str], what: str) -> int:
    n = r.count(what)
    for _ in range(n):
        r.u32(f"{what} index")
        strings.append(r.name(f"{what} name"))
    return n


def parse_name_section(r: Reader) -> NameSection:
    module_name: str | None = None
    functions = locals_ = 0
    others: list[int] = []
    strings: list[str] = []
    last_id = -1
    while not r.at_end():
        at = r.pos
        sub_id = r.byte("name subsection id")
        if sub_id <= last_id:
            raise r.error(f"name section: subsection {sub_id} out of order or repeated", at)
        last_id = sub_id
        sub = r.sub(r.u32("name subsection size"), f"name subsection {sub_id}")
        if sub_id == 0:
            module_name = sub.name("module name")
            strings.append(module_name)
        elif sub_id == 1:
            functions = _name_map(sub, strings, "function names")
        elif sub_id == 2:
            for _ in range(sub.count("local names")):
                sub.u32("local names function index")
                locals_ += _name_map(sub, strings, "local names")
        else:
            others.append(sub_id)
            sub.pos = sub.end
        sub.expect_end(f"name subsection {sub_id}")
    return NameSection(module_name, functions, locals_, tuple(others), tuple(strings))
