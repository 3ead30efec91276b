"""Bytes -> facts -> findings for one artifact, and the whole verification report.

The procedure, per artifact:
  1. read the file and hash it;
  2. parse it (Wasm: verify.wasm; ELF/PE: verify.native) into frozen facts;
  3. Wasm only: cross-check with `wasm-tools validate` under the lane's, the lower lane's,
     and exactly the inferred feature sets;
  4. run every check of the lane's format from the checks table against the lane policy.
Any unreadable or malformed input raises a VerifyError (exit code 3) naming the file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from verify.checks import WasmFacts, run_wasm_checks
from verify.checks_native import run_native_checks
from verify.checktable import Finding
from verify.errors import VerifyError
from verify.formats.report import (
    ArtifactReport,
    FindingModel,
    MemorySummary,
    NativeSummary,
    VerificationReport,
    WasmSummary,
)
from verify.inputs import read_regular_file
from verify.native.facts import NativeFacts
from verify.native.read import native_facts
from verify.policy import Policies, PolicyError, WasmPolicy, load_policies
from verify.wasm import tools
from verify.wasm.inventory import WasmInventory, inventory_bytes


def _read(path: Path) -> bytes:
    return read_regular_file(path, "artifact")  # never a FIFO or device, never unbounded


def _findings(found: list[Finding]) -> list[FindingModel]:
    return [FindingModel(id=f.id, ok=f.ok, evidence=f.evidence) for f in found]


def wasm_summary(inv: WasmInventory, cross_checked: bool) -> WasmSummary:
    return WasmSummary(
        instruction_count=inv.instruction_count,
        function_count=inv.function_count,
        required_proposals=inv.required_names,
        proposal_counts=inv.proposal_counts,
        declared_target_features=[prefix + name for prefix, name in inv.declared],
        target_features_section=inv.declared_present,
        imports=[f"{i.module}.{i.name} ({i.kind})" for i in inv.imports],
        exports=[name for name, _ in inv.exports],
        memories=[
            MemorySummary(
                imported=f"{m.module}.{m.name}" if m.imported else None,
                initial_pages=m.limits.minimum,
                maximum_pages=m.limits.maximum,
                shared=m.limits.shared,
                memory64=m.limits.is64,
            )
            for m in inv.memories
        ],
        custom_sections=list(inv.custom_sections),
        memory_grow_count=inv.op_counts.get("memory.grow", 0),
        cross_checked=cross_checked,
        relaxed_instructions=inv.relaxed_instructions,
    )


def native_summary(f: NativeFacts) -> NativeSummary:
    glibc = ".".join(map(str, f.max_glibc)) if f.max_glibc else None
    return NativeSummary(
        format="PE" if f.format == "PE" else "ELF",
        machine=f.machine,
        libraries=list(f.libraries),
        max_glibc=glibc,
        pie=f.pie,
        nx=f.nx,
        relro=f.relro,
        bind_now=f.bind_now,
        build_id=f.build_id,
        debug_sections=list(f.debug_sections),
        pe_timestamp=f.pe_timestamp,
        instruction_count=f.isa.instruction_count,
        undecoded_bytes=f.isa.undecoded_bytes,
        isa_groups=f.isa.groups,
        fma=f.isa.fma,
    )


def wasm_facts(path: Path, data: bytes, policy: WasmPolicy, cross: bool) -> WasmFacts:
    try:
        inv = inventory_bytes(data)
    except VerifyError as exc:
        exc.where = exc.where or str(path)
        raise
    cc = tools.cross_check(path, inv.required, policy.allowed, policy.lower) if cross else None
    return WasmFacts(inv, cc)


def inspect_artifact(
    path: Path, lane: str, policies: Policies | None = None, *, cross_check: bool = True
) -> ArtifactReport:
    """Inspect one final binary against its lane's policy (steps 1-4 above); `policies`
    defaults to the ones shipped with verify."""
    policies = policies or load_policies()
    kinds = policies.kinds()
    if lane not in kinds:
        raise PolicyError(f"unknown lane {lane!r}; lanes: {', '.join(kinds)}")
    data = _read(path)  # step 1
    digest = hashlib.sha256(data).hexdigest()
    common = {"file": path.name, "sha256": digest, "size": len(data), "lane": lane}
    if kinds[lane] == "wasm":
        policy = policies.wasm[lane]
        facts = wasm_facts(path, data, policy, cross_check)  # steps 2-3
        found = run_wasm_checks(facts, policy)  # step 4
        return ArtifactReport(
            **common,
            kind="wasm",
            ok=all(f.ok for f in found),
            wasm=wasm_summary(facts.inventory, facts.cross_check is not None),
            findings=_findings(found),
        )
    nfacts = native_facts(data, str(path))  # step 2
    found = run_native_checks(nfacts, policies.native[lane])  # step 4
    return ArtifactReport(
        **common,
        kind="native",
        ok=all(f.ok for f in found),
        native=native_summary(nfacts),
        findings=_findings(found),
    )


def _verifier() -> str:
    try:
        return f"tinyrustlm-verify {metadata.version('tinyrustlm-release')}"
    except metadata.PackageNotFoundError:
        return "tinyrustlm-verify (source tree)"


def verification_report(
    items: Iterable[tuple[Path, str]], policy_dir: Path | None = None, *, cross_check: bool = True
) -> VerificationReport:
    """The whole report for (path, lane) pairs, in the given order; the policy files are
    read once for all of them, and their digests are of the bytes that were parsed."""
    policies = load_policies(policy_dir)
    artifacts = [inspect_artifact(p, lane, policies, cross_check=cross_check) for p, lane in items]
    return VerificationReport(
        verifier=_verifier(),
        policy_sha256=dict(policies.sha256),
        ok=bool(artifacts) and all(a.ok for a in artifacts),
        artifacts=artifacts,
    )


def render_table(report: VerificationReport) -> str:
    """A readable table: one header line per artifact, one line per finding."""
    lines = []
    for art in report.artifacts:
        verdict = "PASS" if art.ok else "FAIL"
        lines.append(f"{verdict}  {art.lane:<26} {art.file}  sha256:{art.sha256[:16]}")
        width = max((len(f.id) for f in art.findings), default=0)
        for f in art.findings:
            lines.append(f"  {'ok  ' if f.ok else 'FAIL'}  {f.id:<{width}}  {f.evidence}")
    failed = sum(not a.ok for a in report.artifacts)
    lines.append(f"{len(report.artifacts)} artifact(s), {failed} failed")
    return "\n".join(lines)
