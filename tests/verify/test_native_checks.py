"""Every native check has a passing case (the real samples) and a failing case (one fact
changed); each failing case fires exactly its finding id."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.verify.rustsamples import compile_sample
from verify.checks_native import NATIVE_CHECKS, run_native_checks
from verify.native.errors import MalformedNative
from verify.native.facts import IsaInventory, NativeFacts
from verify.native.read import native_facts
from verify.policy import load_native_policies

LINUX = "x86_64-unknown-linux-gnu"
WINDOWS = "x86_64-pc-windows-gnu"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, NativeFacts]:
    folder = tmp_path_factory.mktemp("native")
    out = {}
    for lane in (LINUX, WINDOWS):
        path = compile_sample(lane, folder)
        out[lane] = native_facts(path.read_bytes(), str(path))
    return out


def _isa(groups: dict[str, int] | None = None, fma: dict[str, int] | None = None) -> Any:
    """The sample's ISA facts with `groups` and/or `fma` replaced (the real sample's mnemonics
    stay with its real groups: its tzcnt is the baseline encoding `rep bsf`)."""
    return lambda f: IsaInventory(
        f.isa.instruction_count,
        0,
        groups or f.isa.groups,
        fma or {},
        {} if groups else f.isa.group_mnemonics,
    )


# (case, lane, field changes (a value, or a function of the facts), the id expected to fail)
CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("wrong-machine", LINUX, {"machine": "aarch64"}, "native.format"),
    ("stray-library", LINUX, {"libraries": ("libc.so.6", "libssl.so.3")}, "native.libraries"),
    ("new-glibc", LINUX, {"glibc_versions": ("GLIBC_2.2.5", "GLIBC_2.38")}, "native.glibc"),
    ("not-pie", LINUX, {"pie": False}, "native.pie"),
    ("exec-stack", LINUX, {"nx": False}, "native.nx"),
    ("lazy-binding", LINUX, {"bind_now": False}, "native.relro"),
    ("no-build-id", LINUX, {"build_id": None}, "native.build_id"),
    ("debug-info", LINUX, {"debug_sections": (".debug_info",)}, "native.debug.absent"),
    ("avx", LINUX, {"isa": _isa({"sse2": 10, "avx": 3})}, "native.isa.baseline"),
    ("fma", LINUX, {"isa": _isa(fma={"vfmadd231ss": 2})}, "native.isa.fma"),
    ("build-path", LINUX, {"paths": ("/home/alice/src/main.rs",)}, "native.paths.build"),
    ("pe-timestamp", WINDOWS, {"pe_timestamp": 1700000000}, "native.pe.timestamp"),
    ("pe-debug-dir", WINDOWS, {"pe_debug_types": ("CODEVIEW",)}, "native.pe.debug_directory"),
    ("pe-no-aslr", WINDOWS, {"pe_high_entropy_va": False}, "native.pe.aslr"),
    (
        "lief-anomaly",
        WINDOWS,
        {"parse_anomalies": ("Corrupted section #3 (.pdata)",)},
        "native.parse.clean",
    ),
    ("shorter-than-headers", LINUX, {"claimed_size": lambda f: f.size + 1}, "native.file.complete"),
]


@pytest.mark.slow
@pytest.mark.parametrize("lane", [LINUX, WINDOWS])
def test_real_sample_passes(real: dict[str, NativeFacts], lane: str) -> None:
    findings = run_native_checks(real[lane], load_native_policies()[lane])
    assert [f for f in findings if not f.ok] == []


@pytest.mark.slow
@pytest.mark.parametrize(("lane", "changes", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_one_fact_changed_fires_one_finding(
    real: dict[str, NativeFacts], lane: str, changes: dict[str, Any], expected: str
) -> None:
    facts = real[lane]
    values = {k: (v(facts) if callable(v) else v) for k, v in changes.items()}
    changed = dataclasses.replace(facts, **values)
    failed = {f.id for f in run_native_checks(changed, load_native_policies()[lane]) if not f.ok}
    assert failed == {expected}


def test_every_native_check_has_a_failing_case() -> None:
    assert {c[3] for c in CASES} == set(NATIVE_CHECKS)


@pytest.mark.slow
def test_isa_inventory_counts_real_instructions(
    real: dict[str, NativeFacts], tmp_path: Path
) -> None:
    isa = real[LINUX].isa
    assert isa.instruction_count > 1000 and isa.groups.get("sse2", 0) > 0


# (case, lane, how the real sample is cut) -> both new findings must fail: lief warns about
# what it could not read and the headers claim more bytes than the file holds.
TRUNCATIONS = [
    ("pe-half", WINDOWS, lambda d: d[: len(d) // 2]),
    ("pe-last-byte", WINDOWS, lambda d: d[:-1]),
    ("pe-last-page", WINDOWS, lambda d: d[:-4096]),
    ("elf-half", LINUX, lambda d: d[: len(d) // 2]),
    ("elf-last-byte", LINUX, lambda d: d[:-1]),
    ("elf-section-table-cut", LINUX, lambda d: d[:-200]),
]


@pytest.fixture(scope="module")
def real_bytes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("native-bytes")
    return {lane: compile_sample(lane, folder).read_bytes() for lane in (LINUX, WINDOWS)}


@pytest.mark.slow
@pytest.mark.parametrize(("lane", "cut"), [c[1:] for c in TRUNCATIONS],
                         ids=[c[0] for c in TRUNCATIONS])  # fmt: skip
def test_truncated_binary_fails_its_lane(
    real_bytes: dict[str, bytes], lane: str, cut: Callable[[bytes], bytes]
) -> None:
    data = cut(real_bytes[lane])
    try:
        facts = native_facts(data, "cut")
    except MalformedNative:
        return  # refused outright: also a failure, with an error id
    failed = {f.id for f in run_native_checks(facts, load_native_policies()[lane]) if not f.ok}
    assert {"native.file.complete", "native.parse.clean"} <= failed, failed
    assert facts.claimed_size > len(data)
