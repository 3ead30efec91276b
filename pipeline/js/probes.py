"""Generate the loader's feature probes (crates/wasm/js/probes.js) from their `.wat` sources.

Each probe is a tiny module that validates only where one feature is supported. Its source is
`crates/wasm/probes/<id>.wat`, whose first line names it: `;; probe <id> version <n>: why`.
Two probes are generated instead, from the lane policy's `relaxed_instructions` (verify/policy/
wasm.json, the one list of admitted relaxed-SIMD instructions):
- `relaxed-simd` validates exactly the admitted instructions (one function each), so an engine
  that lacks any of them refuses the relaxed lanes at the probe;
- `relaxed-dot-semantics` (SEMANTIC_PROBES) runs `i32x4.relaxed_dot_i8x16_i7x16_add_s` on
  operands whose second bytes are >= 128 and whose pair sums overflow i16, and names the result
  vector each allowed semantics gives (the relaxed-SIMD overview's choices: the second operand's
  high bytes read signed, unsigned, or both operands unsigned; the i16 pair sums wrapping,
  saturating, or the four products summed exactly in i32), so the loader records which one the
  engine chose (as XNNPACK's hardware config does).
The pinned wasm-tools (`wasm-tools parse`, found like the verifier finds it) turns the text
into bytes; this module writes them, with their SHA-256, into a JS module of frozen arrays.
The loader re-hashes every probe before use, so a changed byte is an error, never a new
classification. `python -m pipeline.js.probes [--check]` (a test runs the check).
"""

from __future__ import annotations

import hashlib
import itertools
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pipeline.errors import CheckFailed, PipelineError, TabledError
from pipeline.io import process
from pipeline.io.atomic import write_atomic
from pipeline.io.process import CommandTimedOut, CommandUnstartable
from pipeline.toolchain.wasmtools import executable
from verify.policy import WasmPolicy, load_wasm_policies


class ProbeError(TabledError):
    """A feature probe source that cannot be assembled."""

    table: ClassVar[Mapping[str, str]] = {
        "probes.wasm-tools": (
            "install the locked requirements (wasm-tools) and fix the .wat file named"
        ),
        "probes.header": (
            "start the probe with ';; probe <id> version <n>: purpose', <id> being the file name"
        ),
        "probes.none": "restore the probe sources (crates/wasm/js/probes/*.wat) from git",
        "probes.relaxed": (
            "give the relaxed instruction a row in pipeline/js/probes.py RELAXED_ARITY (and, "
            "for the dot, SEMANTIC_PROBES), or drop it from verify/policy/wasm.json"
        ),
    }


class ProbesStale(CheckFailed):
    """probes.js is not generated from the current .wat sources."""

    error_id = "probes.stale"
    default_hint = "python -m pipeline.js.probes"


REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIR = Path("crates/wasm/probes")
OUTPUT = Path("crates/wasm/js/probes.js")
HEADER = re.compile(r"^;; probe ([a-z0-9-]+) version ([1-9][0-9]*): (.+)$")
TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Probe:
    id: str
    version: int
    purpose: str
    wasm: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.wasm).hexdigest()


def _assemble(source: Path, text: str, tool: Path) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "probe.wasm"
        wat = Path(tmp) / "probe.wat"
        wat.write_text(text, encoding="utf-8")
        try:
            done = process.run(
                [str(tool), "parse", str(wat), "-o", str(out)], timeout=TIMEOUT_SECONDS
            )
        except (CommandUnstartable, CommandTimedOut) as exc:
            raise ProbeError(
                f"cannot run wasm-tools: {exc.caught}",
                where=str(source),
                error_id="probes.wasm-tools",
            ) from None
        if done.returncode != 0:
            raise ProbeError(
                f"wasm-tools parse failed: {done.stderr.strip()}",
                where=str(source),
                error_id="probes.wasm-tools",
            )
        return out.read_bytes()


@dataclass(frozen=True)
class ProbeSource:
    """A probe's `.wat` text, where it comes from (a file, or the policy it is generated from)
    and what its first line says of it."""

    path: Path
    id: str
    version: int
    purpose: str
    text: str = ""  # generated probes: the text; files: read from `path`

    def wat(self) -> str:
        return self.text or self.path.read_text(encoding="utf-8")


def probe_sources(repo_root: Path = REPO_ROOT) -> list[ProbeSource]:
    """Every probe source, sorted by id, its header checked (no wasm-tools needed)."""
    sources = []
    for source in sorted((repo_root / SOURCE_DIR).glob("*.wat")):
        first = source.read_text(encoding="utf-8").splitlines()[0]
        match = HEADER.match(first)
        if match is None or match.group(1) != source.stem:
            raise ProbeError(
                "first line must be ';; probe <id> version <n>: purpose' with <id> = file name",
                where=f"{source}:1",
                error_id="probes.header",
            )
        sources.append(ProbeSource(source, match.group(1), int(match.group(2)), match.group(3)))
    if not sources:
        raise ProbeError(
            "no probe sources", where=str(repo_root / SOURCE_DIR), error_id="probes.none"
        )
    return sorted([*sources, relaxed_probe_source()], key=lambda s: s.id)


def read_probes(repo_root: Path = REPO_ROOT) -> list[Probe]:
    """Every probe source, sorted by id, assembled with the pinned wasm-tools."""
    tool = executable()
    return [
        Probe(s.id, s.version, s.purpose, _assemble(s.path, s.wat(), tool))
        for s in probe_sources(repo_root)
    ]


# ---- the relaxed-SIMD probes, generated from the lane policy -----------------------------

POLICY_SOURCE = Path("verify/policy/wasm.json")
RELAXED_PROBE = "relaxed-simd"
RELAXED_PROBE_VERSION = 2  # v1 validated one f32x4.relaxed_madd, which no lane admits
# v128 operands of every relaxed-SIMD instruction (each takes v128s and gives one v128)
RELAXED_ARITY: dict[str, int] = {
    "i8x16.relaxed_swizzle": 2,
    "i32x4.relaxed_trunc_f32x4_s": 1,
    "i32x4.relaxed_trunc_f32x4_u": 1,
    "i32x4.relaxed_trunc_f64x2_s_zero": 1,
    "i32x4.relaxed_trunc_f64x2_u_zero": 1,
    "f32x4.relaxed_madd": 3,
    "f32x4.relaxed_nmadd": 3,
    "f64x2.relaxed_madd": 3,
    "f64x2.relaxed_nmadd": 3,
    "i8x16.relaxed_laneselect": 3,
    "i16x8.relaxed_laneselect": 3,
    "i32x4.relaxed_laneselect": 3,
    "i64x2.relaxed_laneselect": 3,
    "f32x4.relaxed_min": 2,
    "f32x4.relaxed_max": 2,
    "f64x2.relaxed_min": 2,
    "f64x2.relaxed_max": 2,
    "i16x8.relaxed_q15mulr_s": 2,
    "i16x8.relaxed_dot_i8x16_i7x16_s": 2,
    "i32x4.relaxed_dot_i8x16_i7x16_add_s": 3,
}


def admitted_relaxed(policies: Mapping[str, WasmPolicy] | None = None) -> list[str]:
    """The relaxed instructions some lane admits (verify/policy/wasm.json), sorted."""
    policies = load_wasm_policies() if policies is None else policies
    return sorted({i for p in policies.values() for i in p.relaxed_instructions})


def relaxed_probe_source(policies: Mapping[str, WasmPolicy] | None = None) -> ProbeSource:
    """`relaxed-simd`: one function per admitted relaxed instruction, nothing else relaxed."""
    admitted = admitted_relaxed(policies)
    unknown = [i for i in admitted if i not in RELAXED_ARITY]
    if not admitted or unknown:
        raise ProbeError(
            f"no probe can be generated for the admitted relaxed instructions {admitted}"
            + (f": {unknown} have no operand count" if unknown else ""),
            where=str(POLICY_SOURCE),
            error_id="probes.relaxed",
        )
    zero = "(v128.const i64x2 0 0)"
    funcs = [
        f"  (func (result v128) ({name} {' '.join([zero] * RELAXED_ARITY[name])}))"
        for name in admitted
    ]
    purpose = f"relaxed SIMD: exactly the admitted instructions ({', '.join(admitted)})"
    header = f";; probe {RELAXED_PROBE} version {RELAXED_PROBE_VERSION}: {purpose}"
    text = "\n".join([header, "(module", *funcs, ")"]) + "\n"
    return ProbeSource(POLICY_SOURCE, RELAXED_PROBE, RELAXED_PROBE_VERSION, purpose, text)


@dataclass(frozen=True)
class DotSemantics:
    """One allowed semantics of `i32x4.relaxed_dot_i8x16_i7x16_add_s` (see the module doc)."""

    second_operand: str  # "signed" | "unsigned" | "both unsigned": how a byte >= 128 of b reads
    pair_sum: str  # "wrap16" | "saturate16" | "exact32"

    @property
    def name(self) -> str:
        return f"{self.second_operand}/{self.pair_sum}"

    def dot_add(self, a: list[int], b: list[int], c: list[int]) -> list[int]:
        """The instruction under this semantics; a, b: 16 signed bytes, c: 4 i32 lanes."""
        out = []
        for lane in range(4):
            prods = []
            for i in range(4 * lane, 4 * lane + 4):
                x, y = a[i], b[i]
                if b[i] < 0 and self.second_operand != "signed":
                    y = b[i] + 256
                    if self.second_operand == "both unsigned" and a[i] < 0:
                        x = a[i] + 256
                prods.append(x * y)
            if self.pair_sum == "exact32":
                total = sum(prods)
            else:
                pairs = [prods[0] + prods[1], prods[2] + prods[3]]
                if self.pair_sum == "saturate16":
                    pairs = [min(32767, max(-32768, p)) for p in pairs]
                else:
                    pairs = [(p + 32768) % 65536 - 32768 for p in pairs]
                total = sum(pairs)
            out.append((total + c[lane] + (1 << 31)) % (1 << 32) - (1 << 31))
        return out


DOT_SEMANTICS = tuple(
    DotSemantics(b, s)
    for b, s in itertools.product(
        ("signed", "unsigned", "both unsigned"), ("wrap16", "saturate16", "exact32")
    )
)
DOT = "i32x4.relaxed_dot_i8x16_i7x16_add_s"
# the out-of-range operands, one question per i32 lane: lane 0 reads a high byte of b against
# a negative a (signed, unsigned, both unsigned differ); lane 1 overflows an i16 pair sum of
# signed products (-128 * -128, twice), lane 2 of unsigned ones (127 * 255, twice); lane 3 is
# in range (all semantics agree: 4 + c)
DOT_A = [-1, 0, 0, 0, -128, -128, 0, 0, 127, 127, 0, 0, 1, 1, 1, 1]
DOT_B = [-128, 0, 0, 0, -128, -128, 0, 0, -1, -1, 0, 0, 1, 1, 1, 1]
DOT_C = [0, 0, 0, 1000]
SEMANTICS_PROBE = "relaxed-dot-semantics"
SEMANTICS_PROBE_VERSION = 1


@dataclass(frozen=True)
class SemanticProbe:
    probe: Probe
    instruction: str
    variants: dict[str, list[int]]  # semantics name -> the 4 i32 lanes it gives


def dot_variants() -> dict[str, list[int]]:
    """Each allowed semantics' result on the probe's operands; distinct, or the probe is no use."""
    out = {s.name: s.dot_add(DOT_A, DOT_B, DOT_C) for s in DOT_SEMANTICS}
    assert len({tuple(v) for v in out.values()}) == len(out), out
    return out


def semantic_probe_text() -> str:
    def bytes16(v: list[int]) -> str:
        return "(v128.const i8x16 " + " ".join(str(x) for x in v) + ")"

    purpose = f"which allowed semantics {DOT} has here (operands out of the 7-bit range)"
    return (
        f";; probe {SEMANTICS_PROBE} version {SEMANTICS_PROBE_VERSION}: {purpose}\n"
        "(module\n"
        '  (memory (export "memory") 1)\n'
        '  (func (export "run")\n'
        f"    (v128.store (i32.const 0) ({DOT} {bytes16(DOT_A)} {bytes16(DOT_B)}"
        f" (v128.const i32x4 {' '.join(str(x) for x in DOT_C)})))))\n"
    )


def semantic_probes(policies: Mapping[str, WasmPolicy] | None = None) -> list[SemanticProbe]:
    """The semantic probe of every admitted relaxed instruction whose result may differ by
    engine; an admitted instruction with no semantic probe is an error."""
    admitted = admitted_relaxed(policies)
    if admitted != [DOT]:
        raise ProbeError(
            f"semantic probes exist for {DOT} alone, the policy admits {admitted}",
            where=str(POLICY_SOURCE),
            error_id="probes.relaxed",
        )
    text = semantic_probe_text()
    purpose = HEADER.match(text.splitlines()[0])
    assert purpose is not None
    wasm = _assemble(POLICY_SOURCE, text, executable())
    probe = Probe(SEMANTICS_PROBE, SEMANTICS_PROBE_VERSION, purpose.group(3), wasm)
    return [SemanticProbe(probe, DOT, dot_variants())]


def _record(p: Probe, extra: list[str]) -> list[str]:
    data = ", ".join(str(b) for b in p.wasm)
    return [
        "  Object.freeze({",
        f"    id: '{p.id}',",
        f"    version: {p.version},",
        f"    purpose: {p.purpose!r},",
        *extra,
        f"    sha256: '{p.sha256}',",
        f"    bytes: Object.freeze([{data}]),",
        "  }),",
    ]


def render(
    probes: list[Probe], tool_version: str, semantic: list[SemanticProbe] | None = None
) -> bytes:
    """The JS module: one frozen record per probe (id, version, sha256, bytes); the semantic
    probes besides (their instruction, and each allowed semantics' result)."""
    lines = [
        f"// GENERATED by `python -m pipeline.js.probes` from {SOURCE_DIR}/*.wat"
        f" with {tool_version}.",
        "// Do not edit: a test regenerates this file and compares. The loader hashes every",
        "// probe's bytes before use and refuses a probe whose SHA-256 is not the one below.",
        "export const PROBES = Object.freeze([",
    ]
    for p in probes:
        lines += _record(p, [])
    lines.append("]);")
    lines += [
        "// Run (not only validated) once the relaxed-simd probe validates: the stored i32x4",
        "// result is looked up in `variants` (semantics name -> the lanes it gives).",
        "export const SEMANTIC_PROBES = Object.freeze([",
    ]
    for s in semantic or []:
        variants = ", ".join(
            f"'{name}': Object.freeze([{', '.join(str(v) for v in lanes)}])"
            for name, lanes in s.variants.items()
        )
        lines += _record(
            s.probe,
            [
                f"    instruction: '{s.instruction}',",
                f"    variants: Object.freeze({{ {variants} }}),",
            ],
        )
    lines.append("]);")
    return ("\n".join(lines) + "\n").encode()


def tool_version() -> str:
    done = process.run([str(executable()), "--version"], timeout=TIMEOUT_SECONDS)
    # "wasm-tools 1.262.0 (e22db44da 2026-10-13)" -> "wasm-tools 1.262.0"
    return " ".join(done.stdout.split()[:2])


def generate(repo_root: Path = REPO_ROOT) -> bytes:
    return render(read_probes(repo_root), tool_version(), semantic_probes())


def main(argv: list[str]) -> int:
    text = generate()
    target = REPO_ROOT / OUTPUT
    if "--check" in argv:
        if not target.is_file() or target.read_bytes() != text:
            raise ProbesStale(
                "probes.js differs from its .wat sources",
                where=str(target),
                hint="python -m pipeline.js.probes",
            )
        return 0
    write_atomic(target, text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except PipelineError as exc:
        print(exc.diagnostics(), file=sys.stderr)
        sys.exit(1)
