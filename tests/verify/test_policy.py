"""Policy files fail closed: empty, unknown fields, unknown proposals, lanes without checks."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipeline.tree.lanes import load_lanes
from verify.policy import (
    DEFAULT_POLICY_DIR,
    PolicyError,
    lane_kinds,
    load_native_policies,
    load_policies,
    load_wasm_policies,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_policy_covers_every_built_lane() -> None:
    """The build side (lanes.toml) and the verify side (policy) name the same lanes."""
    built = {lane.id: lane.kind for lane in load_lanes(REPO_ROOT / "manifests/lanes.toml").lane}
    assert lane_kinds() == built


def _wasm_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DEFAULT_POLICY_DIR / "wasm.json").read_text())
    return doc


def _edit(fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = _wasm_doc()
    fn(doc)
    return doc


BAD_WASM: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("no-lanes", lambda d: d.update(lanes={}), "empty policy"),
    ("lane-without-checks", lambda d: d["lanes"].update({"scalar-wasm32": {}}), "no checks"),
    ("unknown-field", lambda d: d["lanes"]["scalar-wasm32"].update(extra=1), "unknown field"),
    ("missing-field", lambda d: d["lanes"]["scalar-wasm32"].pop("memory"), "missing field"),
    ("unknown-proposal",
     lambda d: d["lanes"]["scalar-wasm32"]["allowed_proposals"].append("fp16"), "unknown proposal"),
    ("required-not-allowed",
     lambda d: d["lanes"]["scalar-wasm32"]["required_proposals"].append("simd"), "not all allowed"),
    ("wrong-schema", lambda d: d.update(schema="x"), "schema"),
    ("wrong-type", lambda d: d["common"].update(forbid_debug_sections="yes"), "expected"),
    ("bad-memory-source",
     lambda d: d["lanes"]["scalar-wasm32"]["memory"].update(source="both"), "memory.source"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in BAD_WASM],
                         ids=[c[0] for c in BAD_WASM])  # fmt: skip
def test_bad_wasm_policy_fails_closed(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    (tmp_path / "wasm.json").write_text(json.dumps(_edit(edit)))
    with pytest.raises(PolicyError, match=message):
        load_wasm_policies(tmp_path)


def test_missing_and_invalid_policy_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read"):
        load_wasm_policies(tmp_path)
    (tmp_path / "native.json").write_text("{not json")
    with pytest.raises(PolicyError, match="not valid JSON"):
        load_native_policies(tmp_path)


def test_policy_dir_override_is_used(tmp_path: Path) -> None:
    doc = _edit(lambda d: d["common"].update(allowed_path_prefixes=["/elsewhere/"]))
    (tmp_path / "wasm.json").write_text(json.dumps(doc))
    assert load_wasm_policies(tmp_path)["scalar-wasm32"].allowed_path_prefixes == ("/elsewhere/",)


def test_a_run_reads_each_policy_file_once_and_digests_what_it_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verification_report over several artifacts of both kinds reads wasm.json and native.json
    once each, and `policy_sha256` is the digest of the bytes parsed, not of a second read:
    the reader here hands the parser bytes that differ from the disk (one more newline)."""
    from tests.verify import wasmbuild as wb
    from verify.inputs import read_regular_file as real_read
    from verify.inspect import verification_report

    reads: list[str] = []
    given: dict[str, bytes] = {}

    def read_once_more_newline(path: Path, what: str, limit: int | None = None) -> bytes:
        reads.append(path.name)
        given[path.name] = real_read(path, what, limit) + b"\n"
        return given[path.name]

    monkeypatch.setattr("verify.policy.read_regular_file", read_once_more_newline)
    wasm = tmp_path / "m.wasm"
    wasm.write_bytes(wb.module(wb.scalar_spec()))
    items = [(wasm, "scalar-wasm32"), (wasm, "simd128-wasm32"), (wasm, "scalar-wasm32")]
    items.append((Path("/bin/true"), "x86_64-unknown-linux-gnu"))
    report = verification_report(items, cross_check=False)
    assert sorted(reads) == ["native.json", "wasm.json"]
    assert report.policy_sha256 == {n: hashlib.sha256(d).hexdigest() for n, d in given.items()}
    assert [a.lane for a in report.artifacts] == [lane for _, lane in items]


def test_policies_name_every_lane_once() -> None:
    policies = load_policies()
    assert policies.kinds() == lane_kinds()
    assert not set(policies.wasm) & set(policies.native)
    assert set(policies.sha256) == {"wasm.json", "native.json"}
