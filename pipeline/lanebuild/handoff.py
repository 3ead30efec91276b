"""Split build and assemble: lanes built on many machines, released from one.

`build --lane X --records-out DIR` writes a self-contained build folder for the lanes it
built, in the build's own formats:

    DIR/index.json                       a BuildIndex of those lanes (revision, epoch, lock)
    DIR/<lane>/build-record.json         the lane's BuildRecord, byte for byte
    DIR/<lane>/<content-addressed name>  the artifact

`release --from-records DIR...` reads every DIR, and accepts a lane only if it was built from
this exact tree: the index's revision and SOURCE_DATE_EPOCH are HEAD's, its toolchain.lock
digest is this lock's, the record's input digests (sources, Cargo.lock, lane entry, lock)
equal this tree's, and the artifact's bytes hash to what the record and the index say. A lane
may come from one folder only. The release then re-inspects every artifact (step 3) as always.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline import paths
from pipeline.errors import CheckFailed, PipelineError
from pipeline.io.atomic import write_atomic
from pipeline.io.inputs import load_model
from pipeline.lanebuild import inputs
from pipeline.lanebuild.built import Built
from pipeline.lanebuild.records import BuildIndex, BuildInputs, BuildRecord, IndexEntry
from pipeline.tree.snapshot import Tree
from verify.errors import VerifyError
from verify.inputs import read_regular_file

INDEX = "index.json"
RECORD = "build-record.json"


class RecordRefused(CheckFailed):
    """A handed-over lane build is not of this tree, lock or lane entry, or its bytes moved."""


def export_records(repo_root: Path, index: BuildIndex, lanes: Sequence[str], out: Path) -> Path:
    """Copy the `lanes` of a finished build (artifact, record) into `out` with an index."""
    entries: list[IndexEntry] = []
    for entry in index.lanes:
        if entry.lane not in lanes:
            continue
        artifact = repo_root / entry.artifact
        name = Path(entry.artifact).name
        write_atomic(
            out / entry.lane / name, artifact.read_bytes(), mode=artifact.stat().st_mode & 0o755
        )
        write_atomic(out / entry.lane / RECORD, (repo_root / entry.record).read_bytes())
        entries.append(
            entry.model_copy(
                update={"artifact": f"{entry.lane}/{name}", "record": f"{entry.lane}/{RECORD}"}
            )
        )
    handed = index.model_copy(update={"lanes": entries})
    write_atomic(out / INDEX, handed.model_dump_json(by_alias=True, indent=2).encode() + b"\n")
    return out


@dataclass(frozen=True)
class HandedLane:
    entry: IndexEntry  # paths relative to `folder`
    record: BuildRecord
    folder: Path

    @property
    def artifact(self) -> Path:
        return self.folder / self.entry.artifact


def tree_inputs(tree: Tree) -> dict[str, BuildInputs]:
    """Each lane's input digests for this tree, exactly as the build computes them."""
    return inputs.tree_inputs(tree.lanes, tree.workspace, tree.lock_sha256)


def _read_index(folder: Path) -> BuildIndex:
    return load_model(BuildIndex, folder / INDEX, "build-index")


def _check_lane(folder: Path, entry: IndexEntry, want: BuildInputs | None) -> HandedLane:
    where = f"{folder / entry.record}"
    record = load_model(BuildRecord, folder / entry.record, "build-record")
    if want is None:
        raise RecordRefused(
            f"lane {entry.lane} is not in this tree's {paths.LANES_FILE}", where=where
        )
    if record.lane != entry.lane:
        raise RecordRefused(
            f"record is of lane {record.lane}, index says {entry.lane}", where=where
        )
    got = record.inputs
    for field, label in (
        ("sources_sha256", "sources under crates/"),
        ("cargo_lock_sha256", "Cargo.lock"),
        ("lane_entry_sha256", "lanes.toml entry"),
        ("toolchain_lock_sha256", str(paths.LOCK_FILE)),
        ("input_digest", "build driver or inputs"),
    ):
        if getattr(got, field) != getattr(want, field):
            raise RecordRefused(
                f"lane {entry.lane} was built from another {label} than this tree's",
                where=f"{where}: inputs.{field}",
                hint="rebuild the lane from this commit (build --lane ... --records-out)",
            )
    lane = HandedLane(entry, record, folder)
    try:
        actual = hashlib.sha256(read_regular_file(lane.artifact, "artifact")).hexdigest()
    except VerifyError as exc:
        raise PipelineError(exc.message, where=str(lane.artifact)) from exc
    if not actual == entry.sha256 == record.output.sha256:
        raise RecordRefused(
            f"lane {entry.lane}: artifact sha256 {actual[:16]}… is not the recorded "
            f"{record.output.sha256[:16]}…",
            where=str(lane.artifact),
        )
    return lane


def import_records(tree: Tree, folders: Sequence[Path]) -> list[HandedLane]:
    """Every lane of every folder, each checked against this tree; lanes.toml order."""
    git = tree.git
    lock_sha = tree.lock_sha256
    want = tree_inputs(tree)
    found: dict[str, HandedLane] = {}
    for folder in folders:
        index = _read_index(folder)
        where = str(folder / INDEX)
        if index.source_revision != git.revision:
            raise RecordRefused(
                f"built from revision {index.source_revision[:12]}, HEAD is {git.revision[:12]}",
                where=f"{where}: source_revision",
            )
        if index.source_date_epoch != git.commit_time:
            raise RecordRefused(
                "SOURCE_DATE_EPOCH is not HEAD's commit time", where=f"{where}: source_date_epoch"
            )
        if index.toolchain_lock_sha256 != lock_sha:
            raise RecordRefused(
                f"built with another {paths.LOCK_FILE}", where=f"{where}: toolchain_lock_sha256"
            )
        for entry in index.lanes:
            if entry.lane in found:
                raise RecordRefused(
                    f"lane {entry.lane} is in two records folders "
                    f"({found[entry.lane].folder} and {folder})",
                    where=where,
                )
            found[entry.lane] = _check_lane(folder, entry, want.get(entry.lane))
    if not found:
        raise PipelineError("the records folders hold no lane", where=", ".join(map(str, folders)))
    order = list(want)
    return sorted(found.values(), key=lambda h: order.index(h.entry.lane))


def built_from_records(
    tree: Tree, folders: Sequence[Path], lanes: tuple[str, ...] | None = None
) -> Built:
    """The lanes of `folders` (only `lanes` if given) as a Built of this tree."""
    handed = import_records(tree, folders)
    if lanes:
        handed = [h for h in handed if h.entry.lane in set(lanes)]
    index = BuildIndex(
        source_revision=tree.git.revision,
        source_date_epoch=tree.git.commit_time,
        toolchain_lock_sha256=tree.lock_sha256,
        lanes=[h.entry for h in handed],
    )
    named = ", ".join(f"{h.entry.lane} ({h.folder.name})" for h in handed)
    return Built(
        tree,
        index,
        {h.entry.lane: h.artifact for h in handed},
        {h.entry.lane: h.record for h in handed},
        f"{len(handed)} lane(s) from records: {named}",
    )
