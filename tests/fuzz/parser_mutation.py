"""Parser mutation: mutated Wasm modules through our parser, compared with `wasm-tools validate`.

Contract: every mutant either parses or raises a typed error whose offset lies inside the
input (never another exception); and on the compared sample, no module that wasm-tools
refuses as MALFORMED (binary structure: encoding, sizes, opcodes, control-frame nesting)
is accepted by our parser. Our parser does not type-check, so a module wasm-tools refuses
only for a typing/validation reason (`TYPE_ONLY` below: operand types, unknown indices,
alignment, constant expressions ...) and we accept is counted as `type-only`, not a
failure. Every mutant is compared by default (`compare_every`=1: of those we refuse, every
`compare_every`-th). wasm-tools is asked in batches, one `wasm-tools wast` run per `BATCH`
modules (`wasm_tools_verdicts`), since a process per module would cost most of the run; a
sample is asked of `validate` alone as well and any disagreement fails the campaign.
"""

from __future__ import annotations

import random
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.fuzz.tally import Tally, case_rng
from tests.verify import wasmbuild as wb
from verify.errors import VerifyError
from verify.formats.fuzz import FuzzCampaign
from verify.wasm.errors import MalformedWasm
from verify.wasm.inventory import inventory_bytes
from verify.wasm.reader import Reader
from verify.wasm.tools import executable

NAME = "parser_mutation"
DEFAULT_COUNT = 100_000  # every one compared with wasm-tools (issue 26)
BATCH = 500  # modules per `wasm-tools wast` run
# larger modules (the built lanes) go to `validate` one by one: wast lexes escaped text, which
# costs more than a process for a 100 KiB module
BATCH_MAX_BYTES = 64 * 1024
CROSS_CHECK_EVERY = 500  # of the compared: also asked of `wasm-tools validate` alone
# the pseudo mutation class under `outcomes` counting how the batched verdicts compare with
# `wasm-tools validate` asked alone (agree / differs) and the ones it had to be asked instead
REFERENCE = "(wast vs validate)"
REPO = Path(__file__).resolve().parents[2]

# wasm-tools messages that name a validation (typing) rule, not the binary structure. Our
# parser checks only structure, so these may be accepted by it. Anything not listed counts
# as structure: an unknown message is a mismatch to look at, never silently excused.
# "invalid heap type" is structure (the binary grammar of `ref.null`'s immediate, refused by
# wasmparser's reader), so it is not listed: the parser refuses it (verify/wasm/types.py,
# `heaptype_end`; cases 57645 and 82749 of seed 1, tests/verify/test_heap_types.py).
TYPE_ONLY = (
    "type mismatch", "unknown local", "unknown function", "unknown global", "unknown type",
    "unknown table", "unknown memory", "unknown data segment", "unknown elem segment",
    "unknown tag", "alignment must not be larger than natural",
    "atomic instructions must always specify maximum alignment", "invalid lane index",
    "constant expression required", "duplicate export name", "global is immutable",
    "data count section required", "non-defaultable local", "start function",
    "multiple memories", "multiple tables", "invalid result arity", "simd index out of bounds",
    "offset out of range: must be <= 2**32", "undeclared function reference",
)  # fmt: skip
# Control snippets spliced into bodies: each either a stray frame op or an unbalanced one.
CONTROL = (b"\x05", b"\x0b", b"\x07\x00", b"\x19", b"\x18\x00", b"\x02\x40", b"\x03\x40",
           b"\x04\x40", b"\x06\x40", b"\x0c\x03", b"\x0d\x00", b"\x0e\x01\x00\x07",
           b"\x1f\x40\x00", b"\x09\x00", b"\x14\x00", b"\x15\x00")  # fmt: skip
CONTROL_BYTES = (0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0B, 0x0C, 0x0D, 0x0E, 0x18, 0x19, 0x1F)


def _control_module() -> bytes:
    """Well-typed bodies full of structure: the seed the control mutations matter most on."""
    bodies = [
        b"\x41\x00\x04\x40\x01\x05\x01\x0b",  # if/else
        b"\x02\x40\x03\x40\x0c\x01\x0b\x0b",  # block/loop/br
        b"\x02\x40\x41\x00\x0e\x01\x00\x00\x0b",  # br_table
        b"\x06\x40\x01\x19\x01\x0b",  # try/catch_all
        b"\x06\x40\x01\x18\x00",  # try/delegate
        b"\x1f\x40\x01\x02\x00\x01\x0b",  # try_table catch_all
    ]
    return wb.module(wb.ModuleSpec(code=bodies, exports=[]))


def corpus(include_lanes: bool = True) -> list[tuple[str, bytes]]:
    """Builder modules, plus every Wasm lane found in build/ (the real runtime's bodies)."""
    seeds = [("builder-scalar", wb.module(wb.scalar_spec())),
             ("builder-simd", wb.module(wb.simd_spec())),
             ("builder-threads", wb.module(wb.threads_spec())),
             ("builder-control", _control_module())]  # fmt: skip
    if include_lanes:
        for path in sorted(REPO.glob("build/*/runtime.*.wasm")):
            seeds.append((f"lane-{path.parent.name}", path.read_bytes()))
    return seeds


def _code_bodies(data: bytes) -> tuple[int, int, list[tuple[int, int]]] | None:
    """(section id offset, section end, [(body start, body end)]) of the code section."""
    try:
        r = Reader(data, 8)
        while not r.at_end():
            at = r.pos
            sid = r.byte("section id")
            size = r.u32("section size")
            start, end = r.pos, r.pos + size
            r.skip(size, "section")
            if sid != 10:
                continue
            c = Reader(data, start, end)
            bodies = []
            for _ in range(c.count("bodies")):
                n = c.u32("body size")
                bodies.append((c.pos, c.pos + n))
                c.skip(n, "body")
            return at, end, bodies
    except MalformedWasm:
        return None
    return None


def _edit_body(data: bytes, rng: random.Random, edit: Callable[[bytes], bytes]) -> bytes | None:
    """Apply `edit` to one random body and re-encode the body and section sizes."""
    found = _code_bodies(data)
    if found is None or not found[2]:
        return None
    at, end, bodies = found
    pick = rng.randrange(len(bodies))
    parts = []
    for i, (s, e) in enumerate(bodies):
        body = edit(data[s:e]) if i == pick else data[s:e]
        parts.append(wb.uleb(len(body)) + body)
    payload = wb.uleb(len(bodies)) + b"".join(parts)
    return data[:at] + bytes([10]) + wb.uleb(len(payload)) + payload + data[end:]


def _pos(rng: random.Random, data: bytes) -> int:
    return rng.randrange(8, len(data)) if len(data) > 8 else 0


def _mutations() -> dict[str, Callable[[random.Random, bytes], bytes | None]]:
    def set_byte(rng: random.Random, d: bytes) -> bytes:
        b = bytearray(d)
        b[_pos(rng, d)] = rng.randrange(256)
        return bytes(b)

    def set_bytes(rng: random.Random, d: bytes) -> bytes:
        b = bytearray(d)
        for _ in range(rng.randint(2, 6)):
            b[_pos(rng, d)] = rng.randrange(256)
        return bytes(b)

    def flip_bit(rng: random.Random, d: bytes) -> bytes:
        b = bytearray(d)
        b[_pos(rng, d)] ^= 1 << rng.randrange(8)
        return bytes(b)

    def truncate(rng: random.Random, d: bytes) -> bytes:
        return d[: rng.randrange(len(d))]

    def insert(rng: random.Random, d: bytes) -> bytes:
        at = _pos(rng, d)
        return d[:at] + bytes([rng.randrange(256)]) + d[at:]

    def delete(rng: random.Random, d: bytes) -> bytes:
        at = _pos(rng, d)
        return d[:at] + d[at + rng.randint(1, 16) :]

    def in_body(
        edit: Callable[[random.Random, bytes], bytes],
    ) -> Callable[[random.Random, bytes], bytes | None]:
        return lambda rng, d: _edit_body(d, rng, lambda body: edit(rng, body))

    def splice(rng: random.Random, body: bytes) -> bytes:
        at = rng.randrange(len(body) + 1)
        return body[:at] + rng.choice(CONTROL) + body[at:]

    def replace_control(rng: random.Random, body: bytes) -> bytes:
        b = bytearray(body)
        if b:
            b[rng.randrange(len(b))] = rng.choice(CONTROL_BYTES)
        return bytes(b)

    def body_delete(rng: random.Random, body: bytes) -> bytes:
        at = rng.randrange(len(body)) if body else 0
        return body[:at] + body[at + 1 :]

    def body_insert(rng: random.Random, body: bytes) -> bytes:
        at = rng.randrange(len(body) + 1)
        return body[:at] + bytes([rng.randrange(256)]) + body[at:]

    return {
        "byte-set": set_byte,
        "bytes-set": set_bytes,
        "bit-flip": flip_bit,
        "truncate": truncate,
        "insert-byte": insert,
        "delete-span": delete,
        "body-splice-control": in_body(splice),
        "body-replace-control": in_body(replace_control),
        "body-delete-byte": in_body(body_delete),
        "body-insert-byte": in_body(body_insert),
    }


MUTATIONS = _mutations()


def mutant(seed: int, index: int, seeds: list[tuple[str, bytes]]) -> tuple[str, bytes]:
    """Case `index`: (mutation class, bytes); rebuilt from (seed, index) alone."""
    rng = case_rng(seed, index)
    _, data = rng.choice(seeds)
    name = rng.choice(sorted(MUTATIONS))
    out = MUTATIONS[name](rng, data)
    if out is not None:
        return name, out
    changed = bytearray(data)  # no code section to edit: fall back to a plain byte change
    changed[_pos(rng, data)] = rng.randrange(256)
    return "byte-set", bytes(changed)


def wasm_tools_verdict(tool: Path, data: bytes) -> tuple[bool, str]:
    """(valid, first error text) of `wasm-tools validate --features=all` on stdin."""
    done = subprocess.run([str(tool), "validate", "--features=all"], input=data,
                          capture_output=True, timeout=60, check=False)  # fmt: skip
    text = done.stderr.decode("utf-8", "replace")
    lines = [line.strip() for line in text.splitlines()]
    errors = [line for line in lines if line and "WARN" not in line and line != "Caused by:"]
    return done.returncode == 0, ": ".join(errors).removeprefix("error: ")


_FAILED = re.compile(r"^failed directive on <stdin>:(\d+):\d+$")
_CAUSE = re.compile(r"^\s+\d+: (.*)$")
_INVALID = "wasm isn't valid"


def wasm_tools_verdicts(tool: Path, modules: list[bytes]) -> list[tuple[bool, str] | None]:
    """The same verdicts for many modules from one `wasm-tools wast --features=all` run.

    Each module is one `(module binary "...")` directive on its own line; wast validates it
    with the same wasmparser validator and features as `validate` (same binary) and reports
    every failing directive by line, with the validator's error chain under "wasm isn't
    valid". A failure reported any other way, or a module over `BATCH_MAX_BYTES`, is None:
    the caller asks `validate` itself.
    `run` re-checks a sample against `validate` (`cross-check` counts) to keep this honest.
    """
    small = [i for i, m in enumerate(modules) if len(m) <= BATCH_MAX_BYTES]
    verdicts: list[tuple[bool, str] | None] = [None] * len(modules)
    if not small:
        return verdicts
    # one directive per line, every byte escaped; no-test-folded: skip wast's own text
    # round-trip test of valid modules (a check of wasm-tools' printer, not of the module)
    lines = ['(module binary "' + "".join(f"\\{b:02x}" for b in modules[i]) + '")'
             for i in small]  # fmt: skip
    done = subprocess.run([str(tool), "wast", "--features=all", "--color=never",
                           "--assert", "no-test-folded", "-"],
                          input=("\n".join(lines) + "\n").encode("ascii"),
                          capture_output=True, timeout=1800, check=False)  # fmt: skip
    by_line: list[tuple[bool, str] | None] = [(True, "")] * len(small)
    if done.returncode == 0:
        for line_index, i in enumerate(small):
            verdicts[i] = by_line[line_index]
        return verdicts
    failed = 0
    line_no: int | None = None
    causes: list[str] = []

    def close() -> None:
        if line_no is None:
            return
        if _INVALID in causes:
            by_line[line_no - 1] = (False, ": ".join(causes[causes.index(_INVALID) + 1 :]))
        else:
            by_line[line_no - 1] = None

    for text in done.stderr.decode("utf-8", "replace").splitlines():
        match = _FAILED.match(text)
        if match:
            close()
            line_no, causes, failed = int(match.group(1)), [], failed + 1
            continue
        cause = _CAUSE.match(text)
        if cause and line_no is not None:
            causes.append(cause.group(1).strip())
    close()
    if failed == 0:  # the run failed without naming a directive: trust none of it
        return verdicts
    for line_index, i in enumerate(small):
        verdicts[i] = by_line[line_index]
    return verdicts


def classify(message: str) -> str:
    """`type` for a typing/validation refusal (see TYPE_ONLY), else `structure`."""
    low = message.lower()
    return "type" if any(fragment in low for fragment in TYPE_ONLY) else "structure"


def run(seed: int, count: int, compare_every: int = 1, include_lanes: bool = True, *,
        batch: int = BATCH, cross_check_every: int = CROSS_CHECK_EVERY
        ) -> FuzzCampaign:  # fmt: skip
    """`count` mutants through our parser; every module we accept and every
    `compare_every`-th one we refuse compared with wasm-tools (in batches of `batch`), and
    every `cross_check_every`-th compared one also asked of `wasm-tools validate` alone."""
    seeds = corpus(include_lanes)
    tool = executable()
    tally = Tally(NAME, seed)
    for first in range(0, count, batch):
        pending: list[tuple[int, str, str, bytes]] = []
        for index in range(first, min(count, first + batch)):
            name, data = mutant(seed, index, seeds)
            tally.count += 1
            ours = _ours(tally, index, name, data)
            tally.outcome(name, ours)
            if ours == "crash" or (ours == "malformed" and index % compare_every):
                continue
            pending.append((index, name, ours, data))
        verdicts = wasm_tools_verdicts(tool, [data for *_, data in pending]) if pending else []
        for (index, name, ours, data), verdict in zip(pending, verdicts, strict=True):
            if verdict is None:
                tally.outcome(REFERENCE, "asked-validate")
                verdict = wasm_tools_verdict(tool, data)
            elif index % cross_check_every == 0:
                alone = wasm_tools_verdict(tool, data)
                tally.outcome(REFERENCE, "agree" if alone[0] == verdict[0] else "differs")
                if alone[0] != verdict[0]:
                    tally.fail(index, name, "reference-disagrees",
                               f"wast says {verdict}, validate says {alone}")  # fmt: skip
            _judge(tally, index, name, ours, verdict)
    return tally.result()


def _ours(tally: Tally, index: int, name: str, data: bytes) -> str:
    try:
        inventory_bytes(data)
        return "accepted"
    except VerifyError as exc:
        if exc.offset is None or not 0 <= exc.offset <= len(data):
            tally.fail(index, name, "offset-outside-input", exc.diagnostics())
        return "malformed"
    except Exception as exc:  # any other exception is the finding
        tally.fail(index, name, "crash", f"{type(exc).__name__}: {exc}")
        return "crash"


def _judge(tally: Tally, index: int, name: str, ours: str, verdict: tuple[bool, str]) -> None:
    valid, message = verdict
    if valid and ours == "accepted":
        tally.compare("agree-valid")
    elif not valid and ours == "malformed":
        tally.compare("agree-invalid")
    elif valid:  # we refuse what the reference accepts: stricter, counted and shown
        tally.compare("stricter")
    elif classify(message) == "type":
        tally.compare("type-only")
    else:
        tally.compare("structure-mismatch")
        tally.fail(index, name, "structure-mismatch", f"wasm-tools: {message}")
