"""Split build and assemble: lanes built on many machines, released from one.

`build --lane X --records-out DIR` writes a self-contained build folder for the lanes it
built, in the build's own formats:

    DIR/index.json                       a BuildIndex of those lanes (revision, epoch, lock)
    DIR/<lane>/build-record.json         the lane's BuildRecord, byte for byte
    DIR/<lane>/<content-addressed name>  the artifact

`release --from-records DIR...` reads every DIR, and accepts a lane only if it was built from
this exact tree: the index's revision and SOURCE_DATE_EPOCH are HEAD's, its toolchain.lock
digest is this lock's, the record's input digests (sources, Cargo.lock, lane entry, lock)
equal this tree's, and the artifact's bytes hash to what the record and the index say. Every
other claim the release signs about the lane must agree with this tree too
(`pipeline.lanebuild.agreement`): kind and target with lanes.toml, argv, post-link commands
and environment with the deterministic build plan, the self-test with the lane's runner, the
file name and size with the bytes. A lane may come from one folder only, and together the
folders must hold every lane of lanes.toml (or every lane `--lane` names): a release is never
signed with lanes silently missing. Every path an index names stays inside its folder
(relative, no `..`) and never goes through a symbolic link. Each refusal has an id
(`RECORD_ERRORS`). The release then re-inspects every artifact (step 3) as always.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar

from pydantic import BaseModel

from pipeline import paths
from pipeline.errors import CheckFailed, TabledError
from pipeline.io.atomic import write_atomic
from pipeline.io.inputs import InputRejected, load_model
from pipeline.lanebuild import inputs
from pipeline.lanebuild.agreement import disagreements
from pipeline.lanebuild.built import Built
from pipeline.lanebuild.records import BuildIndex, BuildInputs, BuildRecord, IndexEntry
from pipeline.tree.snapshot import Tree
from verify.errors import VerifyError
from verify.inputs import read_regular_file

INDEX = "index.json"
RECORD = "build-record.json"


# error id -> hint: every way `release --from-records` refuses a records folder.
RECORD_ERRORS: dict[str, str] = {
    "records.revision": "rebuild the lanes from this commit (build --lane ... --records-out)",
    "records.epoch": "rebuild the lanes from this commit (build --lane ... --records-out)",
    "records.toolchain-lock": "rebuild the lanes with this toolchain.lock",
    "records.inputs": "rebuild the lane from this commit (build --lane ... --records-out)",
    "records.unknown-lane": "only lanes of this tree's manifests/lanes.toml can be released",
    "records.lane-mismatch": "the index and the record disagree: rebuild the lane",
    "records.digest": "the artifact changed after the build: rebuild the lane",
    "records.lanes-toml": (
        "the lane was built from another lanes.toml entry than this tree's: rebuild the lane"
    ),
    "records.plan": (
        "the record states another command or environment than this tree's build plan: "
        "rebuild the lane with `build --lane ... --records-out` from this commit"
    ),
    "records.smoke": (
        "the self-test must be the lane's own runner (lanes.toml `smoke`), the same in the "
        "index and the record: rebuild the lane"
    ),
    "records.artifact-name": (
        "keep the artifact under the content-addressed name `build --records-out` gave it"
    ),
    "records.duplicate-lane": "give each lane from one records folder only",
    "records.missing-lanes": "add the folders that hold them, or name the lanes with --lane",
    "records.path": "an index names paths inside its folder, as `build --records-out` writes",
    "records.link": "copy the records folder without symbolic links (cp -rL, or a tar of files)",
    "records.unreadable": "give the folder that `build --records-out` wrote",
}


class RecordRefused(TabledError, CheckFailed):
    """A handed-over lane build is not of this tree, lock or lane entry, or its bytes moved;
    or a records folder is incomplete or reaches outside itself (ids: RECORD_ERRORS)."""

    table = RECORD_ERRORS


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


def _inside(folder: Path, rel: str, field: str, where: str) -> Path:
    """`folder/rel`, if `rel` is a plain relative path that stays in `folder` without
    passing through a symbolic link (an index can name neither /etc/passwd nor ../../x)."""
    parts = rel.split("/")  # as `build --records-out` writes them: lane/name, nothing else
    if (
        PurePosixPath(rel).is_absolute()
        or "\\" in rel
        or "\0" in rel
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise RecordRefused(
            f"{field} {rel!r} is not a path inside the records folder",
            error_id="records.path",
            where=where,
        )
    path = folder
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise RecordRefused(
                f"{field} {rel!r} goes through a symbolic link ({path.relative_to(folder)})",
                error_id="records.link",
                where=where,
            )
    return path


M = TypeVar("M", bound=BaseModel)


def _load(model: type[M], path: Path, what: str) -> M:
    if path.is_symlink():
        raise RecordRefused(
            f"{path.name} is a symbolic link", error_id="records.link", where=str(path)
        )
    try:
        return load_model(model, path, what)
    except InputRejected as exc:
        raise RecordRefused(
            f"unreadable {what}: {exc.message}", error_id="records.unreadable", where=exc.where
        ) from exc


def _read_index(folder: Path) -> BuildIndex:
    if not folder.is_dir() or folder.is_symlink():
        raise RecordRefused(
            "not a records folder" + (" (a symbolic link)" if folder.is_symlink() else ""),
            error_id="records.link" if folder.is_symlink() else "records.unreadable",
            where=str(folder),
        )
    return _load(BuildIndex, folder / INDEX, "build-index")


def _check_lane(
    tree: Tree, folder: Path, entry: IndexEntry, want: BuildInputs | None
) -> HandedLane:
    index_where = f"{folder / INDEX}: lanes[{entry.lane}]"
    record_path = _inside(folder, entry.record, "record", f"{index_where}.record")
    artifact_path = _inside(folder, entry.artifact, "artifact", f"{index_where}.artifact")
    where = str(record_path)
    if want is None:
        raise RecordRefused(
            f"lane {entry.lane} is not in this tree's {paths.LANES_FILE}",
            error_id="records.unknown-lane",
            where=index_where,
        )
    record = _load(BuildRecord, record_path, "build-record")
    if record.lane != entry.lane:
        raise RecordRefused(
            f"record is of lane {record.lane}, index says {entry.lane}",
            error_id="records.lane-mismatch",
            where=where,
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
                error_id="records.inputs",
                where=f"{where}: inputs.{field}",
            )
    lane = HandedLane(entry, record, folder)
    try:
        data = read_regular_file(artifact_path, "artifact")
    except VerifyError as exc:
        raise RecordRefused(
            f"unreadable artifact: {exc.message} [{exc.error_id}]",
            error_id="records.unreadable",
            where=str(artifact_path),
        ) from exc
    actual = hashlib.sha256(data).hexdigest()
    if not actual == entry.sha256 == record.output.sha256:
        raise RecordRefused(
            f"lane {entry.lane}: artifact sha256 {actual[:16]}… is not the recorded "
            f"{record.output.sha256[:16]}…",
            error_id="records.digest",
            where=str(artifact_path),
        )
    lane_entry = next(lane for lane in tree.lanes.lane if lane.id == entry.lane)
    found = disagreements(tree, lane_entry, entry, record, artifact_path, len(data))
    if found:
        first = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        side = index_where if first.field.startswith("index.") else where
        raise _disagreeing(
            first.error_id,
            f"lane {entry.lane}: {first.message}{more}",
            f"{side}: {first.field.split('.', 1)[1]}",
        )
    return lane


def _disagreeing(
    error_id: Literal[
        "records.lanes-toml",
        "records.epoch",
        "records.plan",
        "records.smoke",
        "records.artifact-name",
        "records.digest",
    ],
    message: str,
    where: str,
) -> RecordRefused:
    """The refusal of a claim this tree does not make (agreement.DisagreementId: its ids)."""
    return RecordRefused(message, error_id=error_id, where=where)


def import_records(
    tree: Tree, folders: Sequence[Path], lanes: Sequence[str] | None = None
) -> list[HandedLane]:
    """Every lane of every folder, each checked against this tree; lanes.toml order.

    The folders must hold every lane of lanes.toml, or every lane of `lanes` (`--lane`) when
    given; then only those are returned."""
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
                error_id="records.revision",
                where=f"{where}: source_revision",
            )
        if index.source_date_epoch != git.commit_time:
            raise RecordRefused(
                "SOURCE_DATE_EPOCH is not HEAD's commit time",
                error_id="records.epoch",
                where=f"{where}: source_date_epoch",
            )
        if index.toolchain_lock_sha256 != lock_sha:
            raise RecordRefused(
                f"built with another {paths.LOCK_FILE}",
                error_id="records.toolchain-lock",
                where=f"{where}: toolchain_lock_sha256",
            )
        for entry in index.lanes:
            if entry.lane in found:
                raise RecordRefused(
                    f"lane {entry.lane} is in two records folders "
                    f"({found[entry.lane].folder} and {folder})",
                    error_id="records.duplicate-lane",
                    where=where,
                )
            found[entry.lane] = _check_lane(tree, folder, entry, want.get(entry.lane))
    wanted = list(lanes) if lanes else list(want)
    unknown = [lane for lane in wanted if lane not in want]
    if unknown:
        raise RecordRefused(
            f"--lane {', '.join(unknown)}: not in this tree's {paths.LANES_FILE}",
            error_id="records.unknown-lane",
            where="--lane",
        )
    missing = [lane for lane in wanted if lane not in found]
    if missing:
        raise RecordRefused(
            f"the records folders hold {len(found)} of the {len(wanted)} lanes to release; "
            f"missing: {', '.join(missing)}",
            error_id="records.missing-lanes",
            where=", ".join(map(str, folders)),
        )
    order = list(want)
    return sorted((found[lane] for lane in wanted), key=lambda h: order.index(h.entry.lane))


def built_from_records(
    tree: Tree, folders: Sequence[Path], lanes: tuple[str, ...] | None = None
) -> Built:
    """The lanes of `folders` (only `lanes` if given) as a Built of this tree."""
    handed = import_records(tree, folders, lanes)
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
