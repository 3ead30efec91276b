"""Every export the loader, its worker and its self-test script call is one the lane policy
(verify/policy/wasm.json) requires of every lane that runs the calling code, so a bundle
`verify` passes is one the loader can use; a planted call outside the policy fails."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from pipeline.paths import JS_SOURCE_DIR
from verify.policy import WasmPolicy, load_wasm_policies

REPO_ROOT = Path(__file__).resolve().parents[3]
JS_DIR = REPO_ROOT / JS_SOURCE_DIR

# The call shapes of crates/wasm/js: an export named by a quoted string (`rt.call('tr_x')`,
# `this.call('tr_x')`, `check(rt, 'tr_x', ...)`, `exports['tr_x']`), or read as a member of
# an instance's exports (`ex.__tls_base`, `instance.exports.memory`).
QUOTED = re.compile(r"""['"](tr_[a-z0-9_]+)['"]""")
MEMBER = re.compile(r"\b(?:ex|exports|exportsOf)\.([A-Za-z_$][\w$]*)")
# A top-level declaration starts at column 0; a call belongs to the last one above it.
DECLARATION = re.compile(
    r"^(?:export\s+)?(?:async\s+)?(?:function\*?|class|const|let)\s+([A-Za-z_$][\w$]*)", re.M
)
GENERATED = {"constants.js", "probes.js"}  # data, not calls (constants.js is the policy's copy)

# Code that runs on some lanes only: (file, top-level declaration or "*" for the whole file)
# -> "threads" (the lanes with shared memory), "single" (the others) or "probe" (no lane: a
# probe module's own exports). Everything else runs on every lane.
SCOPES: dict[tuple[str, str], str] = {
    ("choice.js", "runSemanticProbes"): "probe",
    ("worker.js", "*"): "threads",
    ("host.js", "ThreadedRuntime"): "threads",
    ("host.js", "LocalRuntime"): "single",
    ("session.js", "threadsPreconditions"): "threads",
    ("session.js", "poolSelfTest"): "threads",
    ("abi.js", "workerCounters"): "threads",
}


def calls(js_dir: Path) -> list[tuple[str, str, str]]:
    """(file, top-level declaration, export name) for every export the JS uses."""
    found = []
    for path in sorted([*js_dir.glob("*.js"), *js_dir.glob("*.mjs")]):
        if path.name in GENERATED:
            continue
        text = path.read_text(encoding="utf-8")
        starts = [(m.start(), m.group(1)) for m in DECLARATION.finditer(text)]
        for pattern in (QUOTED, MEMBER):
            for m in pattern.finditer(text):
                scope = next((n for at, n in reversed(starts) if at <= m.start()), "")
                found.append((path.name, scope, m.group(1)))
    return found


def lanes_running(file: str, scope: str, policies: Mapping[str, WasmPolicy]) -> list[WasmPolicy]:
    kind = SCOPES.get((file, "*")) or SCOPES.get((file, scope))
    if kind == "probe":
        return []
    return [p for p in policies.values() if kind is None or p.memory.shared == (kind == "threads")]


def requires(policy: WasmPolicy, name: str) -> bool:
    if name == "memory":
        return policy.memory.source == "export"
    return name in policy.required_exports or name in policy.required_globals


def unrequired(js_dir: Path, policies: Mapping[str, WasmPolicy]) -> list[str]:
    """Each call of an export some lane running that code is not required to have."""
    return sorted(
        {
            f"{file} {scope}: {name} (lane {p.lane})"
            for file, scope, name in calls(js_dir)
            for p in lanes_running(file, scope, policies)
            if not requires(p, name)
        }
    )


def test_every_export_the_js_calls_is_required_of_the_lanes_that_run_it() -> None:
    assert unrequired(JS_DIR, load_wasm_policies()) == []


def test_the_scan_sees_the_known_call_shapes() -> None:
    """The patterns still match the code (an empty scan would pass anything)."""
    found = {(file, name) for file, _, name in calls(JS_DIR)}
    for seen in [
        ("abi.js", "tr_self_test_detail_bytes"),  # rt.call('...')
        ("abi.js", "tr_path_counters"),  # check(rt, '...')
        ("host.js", "tr_pool_start"),  # this.call('...')
        ("host.js", "memory"),  # instance.exports.memory
        ("worker.js", "__tls_align"),  # ex.<global>.value
        ("worker.js", "tr_worker_main"),  # ex.<function>(...)
        ("selftest.mjs", "tr_self_test"),
    ]:
        assert seen in found


@pytest.mark.parametrize(("file", "scope"), sorted(SCOPES), ids=[f"{f}:{s}" for f, s in SCOPES])
def test_every_lane_scope_names_real_code(file: str, scope: str) -> None:
    text = (JS_DIR / file).read_text(encoding="utf-8")
    assert scope == "*" or scope in DECLARATION.findall(text), f"{file} has no {scope}"


# A call planted into a copy of the JS: (file, anchor, text added after the anchor, the
# export the scan must then report).
WORKER_EXPORTS = "const ex = /** @type {WorkerExports} */ (instance.exports);\n"
CHECK_LANE = "async function checkLane(rt, artifact, signed) {\n"
PLANTS = [
    ("unknown-export", "abi.js", "async function check(rt, name, ...args) {\n",
     "  await rt.call('tr_planted');\n", "tr_planted"),
    ("threads-export-on-every-lane", "session.js", CHECK_LANE,
     "  await rt.call('tr_worker_counters', 0);\n", "tr_worker_counters"),
    ("threads-export-in-shared-helper", "abi.js", "async function withWindow(rt, len, fn) {\n",
     "  await check(rt, 'tr_pool_shutdown');\n", "tr_pool_shutdown"),
    ("unknown-worker-global", "worker.js", WORKER_EXPORTS,
     "  ex.__planted_base.value = 0;\n", "__planted_base"),
    ("memory-export-on-threads-lane", "worker.js", WORKER_EXPORTS,
     "  const own = ex.memory;\n", "memory"),
    ("unknown-call-in-self-test-script", "selftest.mjs",
     "const code = await rt.call('tr_self_test');\n",
     "    await rt.call('tr_self_test_extra');\n", "tr_self_test_extra"),
]  # fmt: skip


@pytest.mark.parametrize(("file", "anchor", "added", "name"), [p[1:] for p in PLANTS],
                         ids=[p[0] for p in PLANTS])  # fmt: skip
def test_a_planted_call_outside_the_policy_fails(
    tmp_path: Path, file: str, anchor: str, added: str, name: str
) -> None:
    js = tmp_path / "js"
    shutil.copytree(JS_DIR, js)
    text = (js / file).read_text(encoding="utf-8")
    assert anchor in text, f"{file} no longer has {anchor!r}"
    (js / file).write_text(text.replace(anchor, anchor + added, 1), encoding="utf-8")
    found = unrequired(js, load_wasm_policies())
    assert found and all(f": {name} (lane " in f for f in found), found
