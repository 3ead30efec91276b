"""Bundle mutation campaign: mutate every file of a real release bundle, and the tarball as
an input of its own, and require each mutant to be refused with a typed error.

One release is made with the release test harness (`tests/harness/release.py`: the real step
table over a fake build, a real Ed25519 key). Each case picks the next target (round robin over
every bundle file plus the tarball given as input), applies one seeded mutation, and runs the
real CLI entry point (`tinyrustlm-verify bundle ... --json`, in-process, with the harness's
fake report deriver as the only stand-in). A case is counted as `refused` (with its error id),
`accepted` (a failure of the verifier) or `crashed` (a traceback, or no JSON on stdout).

    run(seed, count) -> {"cases": ..., "accepted": 0, "crashed": 0, "by_error_id": {...}, ...}
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import shutil
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

from tests.harness.release import fake_report, released
from verify.bundle import verifier
from verify.cli import main as verify_main

TARBALL_INPUT = "<tarball as input>"
Mutation = Callable[[bytes, random.Random], bytes]


def _flip_bit(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    at = rng.randrange(len(out))
    out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def _set_byte(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    at = rng.randrange(len(out))
    out[at] = (out[at] + rng.randrange(1, 256)) % 256
    return bytes(out)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))]


def _append(data: bytes, rng: random.Random) -> bytes:
    return data + rng.randbytes(rng.randrange(1, 64))


def _insert(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.randbytes(rng.randrange(1, 16)) + data[at:]


def _delete(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data))
    return data[:at] + data[at + rng.randrange(1, 32) :]


def _duplicate(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data))
    return data[:at] + data[at : at + rng.randrange(1, 512)] + data[at:]


def _nest(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice((70, 1_000, 100_000))
    return b"[" * depth + data + b"]" * depth


MUTATIONS: dict[str, Mutation] = {
    "flip-bit": _flip_bit,
    "set-byte": _set_byte,
    "truncate": _truncate,
    "append": _append,
    "insert": _insert,
    "delete": _delete,
    "duplicate-range": _duplicate,
    "deep-nesting": _nest,
}


def _verify(path: Path, trusted: Path) -> tuple[str, str]:
    """(outcome, detail): ("refused", error id) | ("accepted", "") | ("crashed", why)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = verify_main(["bundle", str(path), "--trusted-keys", str(trusted), "--json"])
    except BaseException:
        return "crashed", traceback.format_exc(limit=3).splitlines()[-1]
    if "Traceback" in err.getvalue():
        return "crashed", "traceback on stderr"
    try:
        doc = json.loads(out.getvalue())
    except ValueError:
        return "crashed", f"exit {code} without JSON on stdout"
    if code == 0 and doc.get("ok") is True:
        return "accepted", ""
    error_id = doc.get("error", {}).get("id")
    if code not in (1, 3) or not isinstance(error_id, str) or error_id == "verify.resource-limit":
        return "crashed", f"exit {code}, error id {error_id!r}"
    return "refused", error_id


def run(seed: int, count: int, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run `count` seeded cases; returns (and fills `out` with) the counts."""
    result = out if out is not None else {}
    rng = random.Random(seed)
    started = time.monotonic()
    # the harness's bundles hold fake artifacts: re-derive their report with the fake deriver
    with (
        patch.object(verifier, "default_deriver", lambda: fake_report),
        tempfile.TemporaryDirectory(prefix="tinyrustlm-fuzz-bundle-") as tmp_name,
    ):
        tmp = Path(tmp_name)
        harness, pristine = released(tmp / "release")
        work = tmp / "work" / pristine.name
        shutil.copytree(pristine, work)
        names = sorted(p.relative_to(work).as_posix() for p in work.rglob("*") if p.is_file())
        tarball = next(n for n in names if n.endswith(".tar.gz"))
        targets = [*names, TARBALL_INPUT]
        by_id: Counter[str] = Counter()
        by_target: dict[str, Counter[str]] = {t: Counter() for t in targets}
        by_mutation: Counter[str] = Counter()
        accepted: list[str] = []
        crashed: list[str] = []
        for case in range(count):
            target = targets[case % len(targets)]
            name = rng.choice(sorted(MUTATIONS))
            source = tarball if target == TARBALL_INPUT else target
            original = (pristine / source).read_bytes()
            mutated = MUTATIONS[name](original, rng)
            while mutated == original:
                mutated = MUTATIONS[name](original, rng)
            if target == TARBALL_INPUT:
                path = tmp / "work" / source
                path.write_bytes(mutated)
            else:
                path = work
                (work / target).write_bytes(mutated)
            try:
                outcome, detail = _verify(path, harness.trusted)
            finally:
                (work / source).write_bytes(original)
            by_mutation[name] += 1
            label = f"case {case}: {name} of {target}"
            if outcome == "accepted":
                accepted.append(label)
            elif outcome == "crashed":
                crashed.append(f"{label}: {detail}")
            else:
                by_id[detail] += 1
                by_target[target][detail] += 1
    result.update(
        campaign="bundle-mutation",
        seed=seed,
        cases=count,
        refused=sum(by_id.values()),
        accepted=len(accepted),
        crashed=len(crashed),
        ok=not accepted and not crashed,
        by_error_id=dict(sorted(by_id.items())),
        by_target={t: dict(sorted(c.items())) for t, c in by_target.items()},
        by_mutation=dict(sorted(by_mutation.items())),
        accepted_cases=accepted[:20],
        crashed_cases=crashed[:20],
        seconds=round(time.monotonic() - started, 1),
    )
    return result
