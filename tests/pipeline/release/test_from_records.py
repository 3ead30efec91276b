"""`release --from-records DIR...`: lanes handed over from other machines, each checked
against this tree before anything is signed.

The fake repository gets the real lanes.toml and a Cargo.lock, so each record's input
digests are computed by the real `tree_inputs`; records folders are written in the exact
layout `build --records-out` writes (tests/pipeline/lanebuild covers that writer on a real build).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from pipeline.cli import main as release_main
from pipeline.errors import EXIT_USAGE
from pipeline.lanebuild.agreement import planned_run
from pipeline.lanebuild.handoff import RECORD_ERRORS, RecordRefused, import_records, tree_inputs
from pipeline.lanebuild.smoke import engine_names
from pipeline.release.steps import build_from_records
from pipeline.tree.snapshot import read_tree
from tests.harness.release import LANES, REPO_ROOT, Harness, tiny_wasm

Doc = dict[str, Any]


def _commit(repo: Path, commit_time: int) -> None:
    stamp = f"@{commit_time} +0000"
    env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp, "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-qm",
            "lanes",
        ],
        check=True,
        env=env,
    )


def _prepare(harness: Harness) -> None:
    (harness.repo / "manifests").mkdir(exist_ok=True)
    # the real lanes.toml with only the harness's lanes (a release needs every lane of it)
    lanes_toml = tomllib.loads((REPO_ROOT / "manifests/lanes.toml").read_text(encoding="utf-8"))
    ours = {lane for lane, _, _ in LANES}
    lanes_toml["lane"] = [entry for entry in lanes_toml["lane"] if entry["id"] in ours]
    (harness.repo / "manifests/lanes.toml").write_text(tomli_w.dumps(lanes_toml))
    (harness.repo / "crates/Cargo.lock").write_text("# fake lock\nversion = 3\n")
    _commit(harness.repo, harness.commit_time)


def _write_folder(
    harness: Harness,
    folder: Path,
    lanes: list[str],
    edit: Callable[[Doc, Doc], None] = lambda index, record: None,
) -> Path:
    repo = harness.repo
    revision = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    lock_sha = hashlib.sha256((repo / "toolchain.lock").read_bytes()).hexdigest()
    tree = read_tree(repo)
    inputs = tree_inputs(tree)
    plans = {lane.id: (lane, planned_run(tree, lane)) for lane in tree.lanes.lane}
    index: Doc = {
        "schema": "tinyrustlm.build-index.v1",
        "source_revision": revision,
        "source_date_epoch": harness.commit_time,
        "toolchain_lock_sha256": lock_sha,
        "lanes": [],
    }
    records: list[tuple[Path, Doc]] = []
    for lane, kind, target in LANES:
        if lane not in lanes:
            continue
        data = tiny_wasm(lane) if kind == "wasm" else b"\x7fELF fake native " + lane.encode()
        sha = hashlib.sha256(data).hexdigest()
        name = f"{'runtime' if kind == 'wasm' else 'tinyrustlm'}.{lane}.{sha[:16]}"
        name += ".wasm" if kind == "wasm" else ""
        (folder / lane).mkdir(parents=True)
        (folder / lane / name).write_bytes(data)
        entry, plan = plans[lane]
        smoke = {"status": "pass", "engine": engine_names(entry.smoke)[0], "detail": ""}
        record: Doc = {
            "schema": "tinyrustlm.build-record.v1",
            "lane": lane,
            "target": target,
            "kind": kind,
            "argv": plan.argv,  # the build plan, as every builder of this tree records it
            "post_link_argv": plan.post_link,
            "env": plan.env,
            "source_date_epoch": harness.commit_time,
            "inputs": inputs[lane].model_dump(mode="json"),
            "output": {"path": f"build/{lane}/{name}", "sha256": sha, "size": len(data)},
            "smoke": smoke,
        }
        records.append((folder / lane / "build-record.json", record))
        index["lanes"].append(
            {
                "lane": lane,
                "target": target,
                "kind": kind,
                "artifact": f"{lane}/{name}",
                "sha256": sha,
                "size": len(data),
                "record": f"{lane}/build-record.json",
                "smoke": smoke,
            }
        )
    for path, record in records:
        edit(index, record)
        path.write_text(json.dumps(record))
    (folder / "index.json").write_text(json.dumps(index))
    return folder


WASM = [lane for lane, kind, _ in LANES if kind == "wasm"]
NATIVE = [lane for lane, kind, _ in LANES if kind == "native"]


def _set(*path: str, value: Any) -> Callable[[Doc, Doc], None]:
    def edit(index: Doc, record: Doc) -> None:
        target = index if path[0] == "index" else record
        for key in path[1:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


# name -> (edit of the second folder, expected message, its error id)
REFUSALS: dict[str, tuple[Callable[[Doc, Doc], None], str, str]] = {
    "another commit": (
        _set("index", "source_revision", value="0" * 40),
        "built from revision",
        "records.revision",
    ),
    "another commit time": (
        _set("index", "source_date_epoch", value=1),
        "SOURCE_DATE_EPOCH",
        "records.epoch",
    ),
    "another toolchain.lock (index)": (
        _set("index", "toolchain_lock_sha256", value="9" * 64),
        "another toolchain.lock",
        "records.toolchain-lock",
    ),
    "another toolchain.lock (record)": (
        _set("record", "inputs", "toolchain_lock_sha256", value="9" * 64),
        "another toolchain.lock",
        "records.inputs",
    ),
    "another Cargo.lock": (
        _set("record", "inputs", "cargo_lock_sha256", value="8" * 64),
        "another Cargo.lock",
        "records.inputs",
    ),
    "another lane entry": (
        _set("record", "inputs", "lane_entry_sha256", value="7" * 64),
        "another lanes.toml",
        "records.inputs",
    ),
    "another source tree": (
        _set("record", "inputs", "sources_sha256", value="6" * 64),
        "another sources",
        "records.inputs",
    ),
    "record of another lane": (
        _set("record", "lane", value=WASM[0]),
        "record is of lane",
        "records.lane-mismatch",
    ),
}


def _each_entry(field: str, value: Any) -> Callable[[Doc, Doc], None]:
    def edit(index: Doc, record: Doc) -> None:
        for entry in index["lanes"]:
            entry[field] = value

    return edit


def _add_flag(index: Doc, record: Doc) -> None:
    record["argv"] = [*record["argv"], "--features=backdoor"]


def _add_variable(index: Doc, record: Doc) -> None:
    record["env"] = {**record["env"], "RUSTC_WRAPPER": "/usr/bin/env"}


def _change_rustflags(index: Doc, record: Doc) -> None:
    flags = record["env"]["CARGO_ENCODED_RUSTFLAGS"]
    record["env"] = {**record["env"], "CARGO_ENCODED_RUSTFLAGS": flags + "\x1f-Cdebuginfo=2"}


def _smoke_engine(engine: str, *, index: bool, record: bool) -> Callable[[Doc, Doc], None]:
    def edit(index_doc: Doc, record_doc: Doc) -> None:
        if index:
            for entry in index_doc["lanes"]:
                entry["smoke"] = {**entry["smoke"], "engine": engine}
        if record:
            record_doc["smoke"] = {**record_doc["smoke"], "engine": engine}

    return edit


def _grow_index_size(index: Doc, record: Doc) -> None:
    for entry in index["lanes"]:
        entry["size"] = record["output"]["size"] + 1 if entry["lane"] == record["lane"] else 0


# issue 36: everything the release signs about a lane agrees with lanes.toml, the build plan
# and the bytes. name -> (edit of every lane of one folder, expected message, its error id)
DISAGREEMENTS: dict[str, tuple[Callable[[Doc, Doc], None], str, str]] = {
    "argv gains a flag": (_add_flag, "adds '--features=backdoor'", "records.plan"),
    "env gains a variable": (_add_variable, "adds RUSTC_WRAPPER", "records.plan"),
    "rustflags gain a flag": (
        _change_rustflags,
        "sets CARGO_ENCODED_RUSTFLAGS otherwise",
        "records.plan",
    ),
    "post-link step dropped": (
        _set("record", "post_link_argv", value=[]),
        "post-link commands are not the build plan's",
        "records.plan",
    ),
    "index kind": (_each_entry("kind", "native"), "the index says kind", "records.lanes-toml"),
    "index target": (
        _each_entry("target", "wasm32-wasip1"),
        "the index says target 'wasm32-wasip1'",
        "records.lanes-toml",
    ),
    "record target": (
        _set("record", "target", value="wasm32-wasip1"),
        "the record says target",
        "records.lanes-toml",
    ),
    "record epoch": (
        _set("record", "source_date_epoch", value=1),
        "SOURCE_DATE_EPOCH",
        "records.epoch",
    ),
    "index smoke names another engine": (
        _smoke_engine("qemu-aarch64-static", index=True, record=False),
        "the index says smoke pass (qemu-aarch64-static)",
        "records.smoke",
    ),
    "index and record name another engine": (
        _smoke_engine("node worker_threads x2", index=True, record=True),
        "names engine 'node worker_threads x2'",
        "records.smoke",
    ),
    "record output path": (
        _set("record", "output", "path", value="build/elsewhere/runtime.wasm"),
        "the build names it 'build/scalar-wasm32/runtime.scalar-wasm32.",
        "records.artifact-name",
    ),
    "index size": (_grow_index_size, "the index says", "records.digest"),
}


@pytest.mark.parametrize(
    ("edit", "message", "error_id"), DISAGREEMENTS.values(), ids=DISAGREEMENTS.keys()
)
def test_a_claim_the_tree_does_not_make_is_refused(
    harness: Harness, edit: Callable[[Doc, Doc], None], message: str, error_id: str
) -> None:
    _prepare(harness)
    folder = _write_folder(harness, harness.tmp / "machine", WASM + NATIVE, edit)
    with pytest.raises(RecordRefused) as info:
        _release_from(harness, folder)
    assert info.value.error_id == error_id, info.value.diagnostics()
    assert message in info.value.message, info.value.diagnostics()
    assert not (harness.tmp / "dist").exists() or not list((harness.tmp / "dist").glob("t*"))


def test_the_expected_record_is_the_build_plan(harness: Harness) -> None:
    """The control: records stating exactly the plan (as `build` writes them) are accepted,
    and the plan names the pinned compiler, the lane's target and its rustflags."""
    _prepare(harness)
    tree = read_tree(harness.repo)
    for lane in tree.lanes.lane:
        plan = planned_run(tree, lane)
        assert plan.argv[0] == tree.lock.rustc.cargo and plan.argv[-1] == lane.target
        assert plan.env["SOURCE_DATE_EPOCH"] == str(harness.commit_time)
        assert all(flag in plan.env["CARGO_ENCODED_RUSTFLAGS"] for flag in lane.rustflags)
        assert str(harness.repo) not in repr(plan)  # builder paths are placeholders
    folder = _write_folder(harness, harness.tmp / "machine", WASM + NATIVE)
    assert _import(harness, folder) == [lane for lane, _, _ in LANES]


def _release_from(harness: Harness, *folders: Path) -> Path:
    harness.steps = replace(harness.steps, build=build_from_records(folders))
    return harness.release().bundle


def test_two_folders_assemble_a_bundle_that_verifies(harness: Harness) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "wasm-machine", WASM)
    two = _write_folder(harness, harness.tmp / "native-machine", NATIVE)
    bundle = _release_from(harness, one, two)
    verdict = harness.verify(bundle)
    assert verdict.files > len(LANES)
    assert any("lane(s) from records" in line for line in harness.log)


@pytest.mark.parametrize(("edit", "message", "error_id"), REFUSALS.values(), ids=REFUSALS.keys())
def test_a_record_not_of_this_tree_is_refused(
    harness: Harness, edit: Callable[[Doc, Doc], None], message: str, error_id: str
) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "wasm-machine", WASM)
    two = _write_folder(harness, harness.tmp / "native-machine", NATIVE, edit)
    with pytest.raises(RecordRefused, match=message) as info:
        _release_from(harness, one, two)
    assert info.value.error_id == error_id
    assert not (harness.tmp / "dist").exists() or not list((harness.tmp / "dist").glob("t*"))


def test_changed_artifact_bytes_are_refused(harness: Harness) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "wasm-machine", WASM)
    artifact = next((one / WASM[0]).glob("runtime.*"))
    artifact.write_bytes(artifact.read_bytes() + b"\0")
    with pytest.raises(RecordRefused, match="is not the recorded") as info:
        _release_from(harness, one)
    assert info.value.error_id == "records.digest"


def test_a_lane_from_two_folders_is_refused(harness: Harness) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "a", WASM)
    two = _write_folder(harness, harness.tmp / "b", WASM[:1])
    with pytest.raises(RecordRefused, match="in two records folders") as info:
        _release_from(harness, one, two)
    assert info.value.error_id == "records.duplicate-lane"


# -- issue 26: complete, confined, no links ------------------------------------------------
def _import(harness: Harness, *folders: Path, lanes: list[str] | None = None) -> list[str]:
    handed = import_records(read_tree(harness.repo), folders, lanes)
    return [h.entry.lane for h in handed]


def test_a_release_needs_every_lane_unless_lanes_are_named(harness: Harness) -> None:
    _prepare(harness)
    one = _write_folder(harness, harness.tmp / "one-lane", WASM[:1])
    with pytest.raises(RecordRefused) as info:
        _release_from(harness, one)  # 1 of 6 lanes: never signed
    assert info.value.error_id == "records.missing-lanes"
    assert f"1 of the {len(LANES)} lanes" in info.value.message
    assert "error[records.missing-lanes]" in info.value.diagnostics() and info.value.hint
    assert not (harness.tmp / "dist").exists() or not list((harness.tmp / "dist").glob("t*"))
    assert _import(harness, one, lanes=WASM[:1]) == WASM[:1]
    with pytest.raises(RecordRefused, match=f"missing: {NATIVE[0]}"):
        _import(harness, one, lanes=[WASM[0], NATIVE[0]])
    both = _write_folder(harness, harness.tmp / "all", WASM + NATIVE)
    assert _import(harness, both, lanes=[NATIVE[0]]) == [NATIVE[0]]  # only the named lanes


def _index_path(field: str, value: str) -> Callable[[Doc, Doc], None]:
    def edit(index: Doc, record: Doc) -> None:
        index["lanes"][0][field] = value

    return edit


PATHS = {
    "artifact-absolute": ("artifact", "/etc/passwd"),
    "artifact-up": ("artifact", "../../x"),
    "artifact-up-inside": ("artifact", f"{WASM[0]}/../../x"),
    "artifact-dot": ("artifact", f"./{WASM[0]}/x"),
    "record-absolute": ("record", "/etc/passwd"),
    "record-up": ("record", "../index.json"),
}


@pytest.mark.parametrize(("field", "value"), PATHS.values(), ids=PATHS.keys())
def test_an_index_path_outside_the_folder_is_refused(
    harness: Harness, field: str, value: str
) -> None:
    _prepare(harness)
    folder = _write_folder(harness, harness.tmp / "f", WASM[:1], _index_path(field, value))
    with pytest.raises(RecordRefused) as info:
        _import(harness, folder, lanes=WASM[:1])
    assert info.value.error_id == "records.path", info.value.diagnostics()


def _artifact_link(folder: Path, outside: Path) -> None:
    """The artifact is a link to identical bytes outside the folder (digests still match)."""
    artifact = next((folder / WASM[0]).glob("runtime.*"))
    copy = outside / artifact.name
    copy.write_bytes(artifact.read_bytes())
    artifact.unlink()
    artifact.symlink_to(copy)


def _lane_folder_link(folder: Path, outside: Path) -> None:
    moved = outside / WASM[0]
    (folder / WASM[0]).rename(moved)
    (folder / WASM[0]).symlink_to(moved)


def _record_link(folder: Path, outside: Path) -> None:
    record = folder / WASM[0] / "build-record.json"
    (outside / "record.json").write_bytes(record.read_bytes())
    record.unlink()
    record.symlink_to(outside / "record.json")


def _index_link(folder: Path, outside: Path) -> None:
    (outside / "index.json").write_bytes((folder / "index.json").read_bytes())
    (folder / "index.json").unlink()
    (folder / "index.json").symlink_to(outside / "index.json")


LINKS = [_artifact_link, _lane_folder_link, _record_link, _index_link]


@pytest.mark.parametrize("link", LINKS, ids=[f.__name__.strip("_") for f in LINKS])
def test_a_link_in_a_records_folder_is_refused(
    harness: Harness, link: Callable[[Path, Path], None]
) -> None:
    _prepare(harness)
    folder = _write_folder(harness, harness.tmp / "f", WASM[:1])
    outside = harness.tmp / "outside"
    outside.mkdir()
    link(folder, outside)
    with pytest.raises(RecordRefused) as info:
        _import(harness, folder, lanes=WASM[:1])
    assert info.value.error_id == "records.link", info.value.diagnostics()


def test_every_records_refusal_has_an_id_and_a_hint() -> None:
    assert RECORD_ERRORS and all(i.startswith("records.") and h for i, h in RECORD_ERRORS.items())


def test_from_records_given_twice_is_refused_before_anything_runs(
    harness: Harness, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repeating the option used to keep only the last folder list, silently."""
    monkeypatch.chdir(harness.tmp)  # no tree here: any step that ran would fail otherwise
    code = release_main(["release", "--from-records", "a", "b", "--from-records", "c"])
    assert code == EXIT_USAGE
    assert "error[release.usage]: --from-records given 2 times" in capsys.readouterr().err


def _rename_artifact(name: str) -> Callable[[Doc, Doc], None]:
    def edit(index: Doc, record: Doc) -> None:
        if record["lane"] != WASM[0]:
            return
        entry = next(e for e in index["lanes"] if e["lane"] == record["lane"])
        entry["artifact"] = f"{record['lane']}/{name}"
        record["output"]["path"] = f"build/{record['lane']}/{name}"

    return edit


@pytest.mark.parametrize("name", ["runtime.json", "..wasm", "index.json"])
def test_an_artifact_named_like_a_document_or_dots_is_refused_with_an_id(
    harness: Harness, name: str
) -> None:
    """issue 36: an artifact named `*.json` or `..wasm` ended in a traceback."""
    _prepare(harness)
    folder = _write_folder(harness, harness.tmp / "f", WASM + NATIVE, _rename_artifact(name))
    lane_folder = folder / WASM[0]
    original = next(p for p in lane_folder.iterdir() if p.name.startswith("runtime."))
    original.rename(lane_folder / name)
    with pytest.raises(RecordRefused) as info:
        _release_from(harness, folder)
    assert info.value.error_id == "records.artifact-name", info.value.diagnostics()
