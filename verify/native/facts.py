"""Frozen facts about one native binary, whatever its format."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class IsaInventory:
    instruction_count: int
    undecoded_bytes: int  # bytes capstone skipped (data in code, padding)
    groups: dict[str, int]  # capstone instruction group name -> count
    fma: dict[str, int]  # fused multiply-add mnemonic -> count
    # capstone group -> mnemonic -> count: which instructions made a group's count
    group_mnemonics: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NativeFacts:
    format: str  # "ELF" or "PE"
    machine: str  # "x86_64", "aarch64" or the raw machine name
    size: int
    sections: tuple[str, ...]
    libraries: tuple[str, ...]  # ELF DT_NEEDED / PE imported DLLs
    glibc_versions: tuple[str, ...]  # ELF: GLIBC_x.y symbol version requirements
    pie: bool
    nx: bool
    relro: bool  # ELF: PT_GNU_RELRO present
    bind_now: bool  # ELF: DF_BIND_NOW or DF_1_NOW (with RELRO: full RELRO)
    build_id: str | None  # ELF: hex of NT_GNU_BUILD_ID
    debug_sections: tuple[str, ...]
    pe_timestamp: int | None
    pe_debug_types: tuple[str, ...]  # PE debug directory entry types
    pe_dynamic_base: bool
    pe_high_entropy_va: bool
    paths: tuple[str, ...]
    isa: IsaInventory
    parse_anomalies: tuple[str, ...]  # what lief logged as corrupt or truncated
    claimed_size: int  # the furthest byte any header points at (extent.claimed_end)
    claimed_by: str  # which header claims it

    @property
    def max_glibc(self) -> tuple[int, ...] | None:
        versions = [glibc_tuple(v) for v in self.glibc_versions]
        return max(versions) if versions else None


def glibc_tuple(version: str) -> tuple[int, ...]:
    """ "GLIBC_2.2.5" -> (2, 2, 5); a malformed suffix sorts as (0,)."""
    try:
        return tuple(int(p) for p in version.removeprefix("GLIBC_").split("."))
    except ValueError:
        return (0,)
