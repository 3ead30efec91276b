"""What changed in the final bytes since the previous release: features, opcode counts by
proposal, sizes, export and import sets, memory, the compiler and the pinned toolchain.

`release_diff(old, new)` gives one `DiffRow` per fact, changed or not; the page shows the
changed ones and folds the rest away (what a reviewer of a compiler bump reads first)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from verify.bundle.page.html import el, section, table
from verify.bundle.page.inputs import Release
from verify.bundle.page.lanes import memory_text
from verify.formats.report import ArtifactReport

ABSENT = "(absent)"


@dataclass(frozen=True)
class DiffRow:
    subject: str  # "release", a lane id, or "toolchain"
    fact: str
    old: str
    new: str

    @property
    def changed(self) -> bool:
        return self.old != self.new


def _set_text(items: set[str]) -> str:
    return ", ".join(sorted(items)) or "none"


def _number_change(old: int | None, new: int | None) -> tuple[str, str]:
    before = ABSENT if old is None else f"{old:,}"
    if new is None:
        return before, ABSENT
    after = f"{new:,}"
    if old is not None and old != new:
        delta = new - old
        after += f" ({delta:+,}" + (f", {100 * delta / old:+.1f}%)" if old else ")")
    return before, after


def _lane_rows(lane: str, old: ArtifactReport | None, new: ArtifactReport | None) -> list[DiffRow]:
    rows = [DiffRow(lane, "present", "yes" if old else "no", "yes" if new else "no")]
    before, after = _number_change(old.size if old else None, new.size if new else None)
    rows.append(DiffRow(lane, "bytes", before, after))
    rows.append(
        DiffRow(lane, "SHA-256", old.sha256 if old else ABSENT, new.sha256 if new else ABSENT)
    )
    ow, nw = (old.wasm if old else None), (new.wasm if new else None)
    if ow is None and nw is None:
        return rows
    rows.append(
        DiffRow(
            lane,
            "features found",
            ", ".join(ow.declared_target_features) if ow else ABSENT,
            ", ".join(nw.declared_target_features) if nw else ABSENT,
        )
    )
    proposals = sorted(
        set(ow.proposal_counts if ow else {}) | set(nw.proposal_counts if nw else {})
    )
    for name in proposals:
        o = ow.proposal_counts.get(name, 0) if ow else None
        n = nw.proposal_counts.get(name, 0) if nw else None
        before, after = _number_change(o, n)
        rows.append(DiffRow(lane, f"opcodes: {name}", before, after))
    for fact, old_set, new_set in (
        ("exports", set(ow.exports) if ow else set(), set(nw.exports) if nw else set()),
        ("imports", set(ow.imports) if ow else set(), set(nw.imports) if nw else set()),
    ):
        added, removed = new_set - old_set, old_set - new_set
        after = _set_text(new_set)
        if added or removed:
            after = f"+[{_set_text(added)}] −[{_set_text(removed)}]"
        rows.append(DiffRow(lane, fact, _set_text(old_set), after if ow else _set_text(new_set)))
    rows.append(
        DiffRow(
            lane,
            "memory",
            memory_text(ow.memories) if ow else ABSENT,
            memory_text(nw.memories) if nw else ABSENT,
        )
    )
    return rows


def release_diff(old: Release, new: Release) -> list[DiffRow]:
    om, nm = old.manifest, new.manifest
    rows = [
        DiffRow("release", "version", om.version, nm.version),
        DiffRow("release", "source revision", om.source_revision, nm.source_revision),
        DiffRow(
            "release",
            "rustc / LLVM",
            f"{om.compiler.rustc} / {om.compiler.llvm}" if om.compiler else ABSENT,
            f"{nm.compiler.rustc} / {nm.compiler.llvm}" if nm.compiler else ABSENT,
        ),
        DiffRow(
            "release", "toolchain.lock SHA-256", om.toolchain_lock_sha256, nm.toolchain_lock_sha256
        ),
    ]
    old_arts = {a.lane: a for a in old.report.artifacts}
    new_arts = {a.lane: a for a in new.report.artifacts}
    order = [a.lane for a in new.report.artifacts]
    order += [lane for lane in old_arts if lane not in new_arts]
    for lane in order:
        rows += _lane_rows(lane, old_arts.get(lane), new_arts.get(lane))
    ot, nt = old.toolchain(), new.toolchain()
    for name in sorted(ot.keys() | nt.keys()):
        rows.append(DiffRow("toolchain", name, ot.get(name, ABSENT), nt.get(name, ABSENT)))
    return rows


def _row(r: DiffRow) -> list[ET.Element | str]:
    return [
        el("th", el("code", r.subject), scope="row"),
        r.fact,
        el("td", el("code", r.old)),
        el("td", el("code", r.new), cls="changed" if r.changed else "muted"),
    ]


def diff_section(new: Release, old: Release | None) -> ET.Element:
    head = el("h2", "Changes since the previous release")
    if old is None:
        return section(
            "diff",
            head,
            el(
                "p",
                "No previous release: this bundle carries none (release --previous), and none "
                "was given (tinyrustlm-verify report --previous).",
                cls="absent",
                id="diff-absent",
            ),
        )
    rows = release_diff(old, new)
    changed = [r for r in rows if r.changed]
    same = [r for r in rows if not r.changed]
    columns = ("subject", "fact", old.manifest.version, new.manifest.version)
    return section(
        "diff",
        head,
        el(
            "p",
            f"Against {old.manifest.version} (build id {old.manifest.build_id[:16]}…): "
            f"{len(changed)} of {len(rows)} facts changed.",
        ),
        table(columns, (_row(r) for r in changed), id="diff-changed"),
        el(
            "details",
            el("summary", f"{len(same)} unchanged facts"),
            table(columns, (_row(r) for r in same), id="diff-unchanged"),
        ),
    )
