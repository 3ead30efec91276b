"""`tinyrustlm.fetch-state.v1`: what `fetch` remembers about one repository between runs.

Kept in the client state folder beside python-tuf's trusted metadata, so that a release older
than one already fetched from that repository is refused (unless `--allow-downgrade`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from verify.formats.base import Frozen, Sha256Hex
from verify.formats.release_version import ReleaseVersion

FETCH_STATE_SCHEMA = "tinyrustlm.fetch-state.v1"


class FetchState(Frozen):
    schema_: Literal["tinyrustlm.fetch-state.v1"] = Field(
        "tinyrustlm.fetch-state.v1", alias="schema"
    )
    repository: str = Field(description="the repository URL this state belongs to")
    newest_version: ReleaseVersion = Field(description="the newest release version fetched so far")
    newest_build_id: Sha256Hex
