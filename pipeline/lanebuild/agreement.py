"""What a handed-over lane build must agree with before a release signs anything about it.

A build record and its index entry are a builder's claims. `release --from-records` signs
their kind, target, command, environment and self-test into the manifest, SBOM and
provenance, so each claim is compared with what this tree itself says:

- kind and target: the lane's `manifests/lanes.toml` entry;
- argv, post-link commands and environment: the build plan, which is deterministic — the
  exact run `build` makes for the lane on this tree (`driver.lane_run`, the same code), as a
  record states it (`cargo.as_recorded`: builder paths as $WORKSPACE, $CARGO_HOME,
  $STD_SYSROOT), so a flag nobody passed, or a variable nobody set, is a disagreement;
- SOURCE_DATE_EPOCH: HEAD's commit time;
- the self-test: the index and the record say the same, and name an engine of the lane's
  runner (`smoke.engine_names`);
- the artifact: its content-addressed file name and its size are those of its bytes.

`disagreements` is a pure check: it returns every disagreement with its error id (the
`records.*` ids of `handoff.RECORD_ERRORS`), the first of which the handoff raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pipeline.lanebuild.cargo import CargoRun, as_recorded
from pipeline.lanebuild.driver import artifact_name, lane_run
from pipeline.lanebuild.records import BuildRecord, IndexEntry
from pipeline.lanebuild.smoke import engine_names
from pipeline.lanebuild.stdbuild import sysroot_folder
from pipeline.tree.lanes import Lane
from pipeline.tree.snapshot import Tree

# The records.* ids of handoff.RECORD_ERRORS a disagreement is refused with.
DisagreementId = Literal[
    "records.lanes-toml",
    "records.epoch",
    "records.plan",
    "records.smoke",
    "records.artifact-name",
    "records.digest",
]


@dataclass(frozen=True)
class Disagreement:
    error_id: DisagreementId
    field: str  # where: "record.argv", "index.kind", ...
    message: str


def planned_run(tree: Tree, lane: Lane) -> CargoRun:
    """The lane's build on this tree exactly as its build record states it (nothing built:
    a build_std lane's sysroot is named by its cache key, as the build names it)."""
    sysroot = sysroot_folder(lane, tree.lock) if lane.build_std else None
    return as_recorded(lane_run(tree, lane, sysroot), tree.root)


def _list_difference(got: list[str], want: list[str]) -> str:
    extra = [a for a in got if a not in want]
    missing = [a for a in want if a not in got]
    parts = [f"{len(got)} item(s), the plan has {len(want)}"] if not (extra or missing) else []
    if extra:
        parts.append(f"adds {', '.join(map(repr, extra[:3]))}")
    if missing:
        parts.append(f"lacks {', '.join(map(repr, missing[:3]))}")
    return "; ".join(parts) or "in another order"


def _env_difference(got: dict[str, str], want: dict[str, str]) -> str:
    changed = sorted(k for k in got.keys() | want.keys() if got.get(k) != want.get(k))
    added = [k for k in changed if k not in want]
    dropped = [k for k in changed if k not in got]
    differs = [k for k in changed if k in want and k in got]
    parts = [
        *([f"adds {', '.join(added)}"] if added else []),
        *([f"lacks {', '.join(dropped)}"] if dropped else []),
        *([f"sets {', '.join(differs)} otherwise"] if differs else []),
    ]
    return "; ".join(parts)


def _plan(record: BuildRecord, plan: CargoRun) -> list[Disagreement]:
    found = []
    if record.argv != plan.argv:
        found.append(
            Disagreement(
                "records.plan",
                "record.argv",
                f"the recorded cargo argv is not the build plan's: "
                f"{_list_difference(record.argv, plan.argv)}",
            )
        )
    if record.post_link_argv != plan.post_link:
        found.append(
            Disagreement(
                "records.plan",
                "record.post_link_argv",
                "the recorded post-link commands are not the build plan's: "
                f"{len(record.post_link_argv)} command(s), the plan has {len(plan.post_link)}"
                + "".join(
                    f"; command {i}: {_list_difference(got, want)}"
                    for i, (got, want) in enumerate(
                        zip(record.post_link_argv, plan.post_link, strict=False)
                    )
                    if got != want
                ),
            )
        )
    if record.env != plan.env:
        found.append(
            Disagreement(
                "records.plan",
                "record.env",
                f"the recorded environment is not the build plan's: "
                f"{_env_difference(record.env, plan.env)}",
            )
        )
    return found


def disagreements(
    tree: Tree, lane: Lane, entry: IndexEntry, record: BuildRecord, artifact: Path, size: int
) -> list[Disagreement]:
    """Every way `entry` and `record` (lane `lane`, bytes of `size` at `artifact`, already
    checked against their sha256) disagree with this tree; empty when they agree."""
    found: list[Disagreement] = []
    for side, claim in (("index", entry), ("record", record)):
        for field in ("kind", "target"):
            said, want = getattr(claim, field), getattr(lane, field)
            if said != want:
                found.append(
                    Disagreement(
                        "records.lanes-toml",
                        f"{side}.{field}",
                        f"the {side} says {field} {said!r}, lanes.toml says {want!r}",
                    )
                )
    if record.source_date_epoch != tree.git.commit_time:
        found.append(
            Disagreement(
                "records.epoch",
                "record.source_date_epoch",
                "the record's SOURCE_DATE_EPOCH is not HEAD's commit time",
            )
        )
    found += _plan(record, planned_run(tree, lane))
    if entry.smoke != record.smoke:
        found.append(
            Disagreement(
                "records.smoke",
                "index.smoke",
                f"the index says smoke {entry.smoke.status} ({entry.smoke.engine}), the record "
                f"{record.smoke.status} ({record.smoke.engine})",
            )
        )
    engines = engine_names(lane.smoke)
    for side, smoke in (("index", entry.smoke), ("record", record.smoke)):
        if smoke.engine not in engines:
            found.append(
                Disagreement(
                    "records.smoke",
                    f"{side}.smoke.engine",
                    f"the {side}'s self-test names engine {smoke.engine!r}; lane {lane.id}'s "
                    f"runner {lane.smoke} is {' or '.join(map(repr, engines))}",
                )
            )
    name = artifact_name(lane, record.output.sha256)
    built_at = (tree.build_dir / lane.id / name).relative_to(tree.root).as_posix()
    if artifact.name != name or record.output.path != built_at:
        found.append(
            Disagreement(
                "records.artifact-name",
                "index.artifact" if artifact.name != name else "record.output.path",
                f"the artifact is named {artifact.name!r} (recorded {record.output.path!r}); "
                f"the build names it {built_at!r}",
            )
        )
    for side, said in (("index", entry.size), ("record", record.output.size)):
        if said != size:
            found.append(
                Disagreement(
                    "records.digest",
                    f"{side}.size" if side == "index" else "record.output.size",
                    f"the {side} says {said} bytes, the artifact has {size}",
                )
            )
    return found
