"""What a build hands on: one artifact and one record per lane, of one tree."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pipeline import paths
from pipeline.errors import CheckFailed, TabledError
from pipeline.io.inputs import load_model
from pipeline.lanebuild.records import BuildIndex, BuildRecord
from pipeline.tree.snapshot import Tree


class IndexStale(TabledError, CheckFailed):
    """build/index.json was made from another revision, commit time or toolchain lock."""

    table: ClassVar[Mapping[str, str]] = {
        "build-index.revision": "rebuild for this revision: tinyrustlm-release build",
        "build-index.epoch": "rebuild for this revision: tinyrustlm-release build",
        "build-index.toolchain-lock": (
            "rebuild with the current toolchain.lock: tinyrustlm-release build"
        ),
    }


@dataclass(frozen=True)
class Built:
    tree: Tree
    index: BuildIndex
    artifacts: Mapping[str, Path]  # lane -> where its bytes are
    records: Mapping[str, BuildRecord]  # lane -> how it was built
    detail: str

    @property
    def wasm_lanes(self) -> list[str]:
        return [e.lane for e in self.index.lanes if e.kind == "wasm"]


def check_index(tree: Tree, index: BuildIndex, where: str = str(paths.BUILD_INDEX)) -> None:
    """The build must be of this commit and this toolchain.lock."""
    git = tree.git
    if index.source_revision != git.revision:
        raise IndexStale(
            f"build index is of revision {index.source_revision[:12]}, HEAD is {git.revision[:12]}",
            where=where,
            error_id="build-index.revision",
        )
    if index.source_date_epoch != git.commit_time:
        raise IndexStale(
            "build index SOURCE_DATE_EPOCH is not HEAD's commit time",
            where=where,
            error_id="build-index.epoch",
        )
    if index.toolchain_lock_sha256 != tree.lock_sha256:
        raise IndexStale(
            f"build index was made with a different {paths.LOCK_FILE}",
            where=where,
            error_id="build-index.toolchain-lock",
        )


def built_from_index(tree: Tree, index: BuildIndex, lanes: tuple[str, ...] | None = None) -> Built:
    """A Built of the lanes in `index` (paths relative to the tree's root), only `lanes` if
    given (the index also keeps other lanes' earlier builds)."""
    check_index(tree, index)
    if lanes:
        wanted = set(lanes)
        index = index.model_copy(update={"lanes": [e for e in index.lanes if e.lane in wanted]})
    records = {
        e.lane: load_model(BuildRecord, tree.root / e.record, "build-record") for e in index.lanes
    }
    artifacts = {e.lane: tree.root / e.artifact for e in index.lanes}
    detail = f"{len(index.lanes)} lane(s): {', '.join(e.lane for e in index.lanes)}"
    return Built(tree, index, artifacts, records, detail)
