"""The Debian archive index as apt sees it: published .deb facts for an exact version."""

from __future__ import annotations

import os
from dataclasses import dataclass

from pipeline.errors import PipelineError
from pipeline.io import process


@dataclass(frozen=True)
class PublishedDeb:
    filename: str
    size: int
    sha256: str


class ArchiveError(PipelineError):
    """The archive index does not (or no longer) publish a pinned package version."""

    error_id = "toolchain.archive"
    default_hint = (
        "run `apt-get update`; if the pinned version left the archive, relock with "
        "`tinyrustlm-release toolchain lock`"
    )


def published(spec: str, version: str) -> PublishedDeb:
    """Facts of `NAME:ARCH=VERSION` from `apt-cache show` (needs a fresh `apt-get update`)."""
    done = process.run(
        ["apt-cache", "show", f"{spec}={version}"], env={**os.environ, "LC_ALL": "C"}
    )
    fields: dict[str, str] = {}
    for line in done.stdout.splitlines():
        if not line.strip():
            break  # first stanza only: the one apt would download
        key, sep, value = line.partition(": ")
        if sep and not line.startswith(" "):
            fields[key] = value.strip()
    if done.returncode != 0 or not {"Filename", "Size", "SHA256"} <= fields.keys():
        raise ArchiveError(
            f"the archive index does not publish {spec}={version}",
            where="apt-cache show",
            hint="run `apt-get update`; if the version was superseded, re-lock with "
            "`tinyrustlm-release toolchain lock` and review the diff",
        )
    return PublishedDeb(fields["Filename"], int(fields["Size"]), fields["SHA256"])
