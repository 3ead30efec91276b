"""`toolchain check`: compare this machine with toolchain.lock, field by field."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.errors import CheckFailed, PipelineError
from pipeline.io.atomic import write_atomic
from pipeline.io.inputs import load_json
from pipeline.toolchain import probe
from pipeline.toolchain.lockfile import ToolchainLock


class ToolchainDrift(CheckFailed):
    """The installed toolchain differs from the lock."""

    error_id = "toolchain.drift"
    default_hint = "run `tinyrustlm-release toolchain install` (or `toolchain check` for the table)"


@dataclass(frozen=True)
class Difference:
    field: str  # dotted name, e.g. "package.rustc:amd64.version"
    locked: str
    found: str
    severity: str = "drift"  # "drift" fails the check; "warning" is reported only


def compare(lock: ToolchainLock, digest_cache: Path | None = None) -> list[Difference]:
    """Every difference between the lock and this machine, in lock order.

    `digest_cache`: a JSON file of sysroot file digests keyed by stat signature, so that
    repeated checks (every build) skip re-hashing unchanged files; None hashes everything.
    """
    diffs: list[Difference] = []

    def differ(field: str, locked: str, found: str, severity: str = "drift") -> None:
        if locked != found:
            diffs.append(Difference(field, locked, found, severity))

    differ(
        "foreign_architectures",
        ",".join(sorted(lock.foreign_architectures)),
        ",".join(a for a in probe.foreign_architectures() if a in lock.foreign_architectures),
    )
    facts = probe.rustc_facts(lock.rustc.binary)
    differ("rustc.release", lock.rustc.release, facts.get("release", probe.MISSING))
    differ("rustc.commit_hash", lock.rustc.commit_hash, facts.get("commit-hash", probe.MISSING))
    differ("rustc.llvm_version", lock.rustc.llvm_version, facts.get("LLVM version", probe.MISSING))
    differ("rustc.host", lock.rustc.host, facts.get("host", probe.MISSING))
    differ("rustc.cargo_version", lock.rustc.cargo_version, probe.cargo_version(lock.rustc.cargo))
    versions = probe.installed_versions(list(lock.package))
    for pkg in lock.package:
        differ(f"package.{pkg.spec}.version", pkg.version, versions[pkg.spec])
    known = _load_cache(digest_cache)
    for root in lock.sysroot:
        digest = probe.sysroot_digest(root, known)
        differ(f"sysroot.{root.target}.files", str(root.files), str(digest.files))
        differ(f"sysroot.{root.target}.sha256", root.sha256, digest.sha256)
    source = probe.sysroot_digest(lock.std_source, known)
    differ("std_source.files", str(lock.std_source.files), str(source.files))
    differ("std_source.sha256", lock.std_source.sha256, source.sha256)
    for tool in lock.tool:
        differ(f"tool.{tool.name}.version", tool.version, probe.tool_version(tool))
    if digest_cache is not None and known is not None:
        write_atomic(digest_cache, json.dumps(known, sort_keys=True).encode())
    # The trap on these machines: rustup's rustc/cargo first on PATH. Build code never uses
    # PATH (it calls the pinned binaries by absolute path), so this is a warning, not drift.
    pinned = {"rustc": lock.rustc.binary, "cargo": lock.rustc.cargo}
    for name, found in probe.path_shadows(pinned).items():
        differ(f"path.{name}", pinned[name], found, severity="warning")
    return diffs


def _load_cache(path: Path | None) -> dict[str, tuple[probe.Signature, str]] | None:
    if path is None:
        return None
    try:
        raw = load_json(path, "json")
        return {k: (tuple(v[0]), str(v[1])) for k, v in raw.items()}
    except (PipelineError, ValueError, TypeError, IndexError, AttributeError):
        return {}  # no cache or a broken one: hash everything, write a fresh one


def render_table(diffs: list[Difference]) -> str:
    if not diffs:
        return "toolchain matches toolchain.lock: no differences"
    rows = [("field", "locked", "found", "severity")]
    rows += [(d.field, d.locked, d.found, d.severity) for d in diffs]
    widths = [min(max(len(r[i]) for r in rows), 64) for i in range(4)]
    lines = ["  ".join(c[:64].ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    drift = sum(d.severity == "drift" for d in diffs)
    lines.append(f"{drift} drifted field(s), {len(diffs) - drift} warning(s)")
    if any(d.field.startswith("path.") for d in diffs):
        lines.append(
            "note: `rustc`/`cargo` on PATH are not the pinned ones (rustup?); the build "
            "calls the pinned binaries by absolute path, never through PATH"
        )
    return "\n".join(lines)


def as_json(diffs: list[Difference]) -> list[dict[str, str]]:
    return [asdict(d) for d in diffs]


def drifted(diffs: list[Difference]) -> list[Difference]:
    return [d for d in diffs if d.severity == "drift"]


def check_installed(lock: ToolchainLock, lock_path: Path, build_dir: Path) -> None:
    """Raise CheckFailed naming every drifted field; what build and release call first."""
    cache = build_dir / ".scratch" / "sysroot-digests.json"
    bad = drifted(compare(lock, digest_cache=cache))
    if bad:
        raise ToolchainDrift(
            f"the installed toolchain differs from {lock_path.name} in {len(bad)} field(s): "
            + ", ".join(d.field for d in bad),
            where=str(lock_path),
            hint="run `tinyrustlm-release toolchain install` (or `toolchain check` for the table)",
        )
