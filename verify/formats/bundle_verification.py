"""`tinyrustlm.bundle-verification.v1`: what `tinyrustlm-verify bundle --json` prints.

The steps that passed, in order, and either the verified release's identity or the error
that stopped verification (its stable id, the step it failed at, the exit code).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from verify.formats.base import Frozen, Sha256Hex

BUNDLE_VERIFICATION_SCHEMA = "tinyrustlm.bundle-verification.v1"


class StepOutcome(Frozen):
    number: int = Field(ge=1)
    title: str
    detail: str


class VerificationError(Frozen):
    id: str = Field(description="stable error id, e.g. signature.untrusted-key")
    message: str
    where: str
    step: int | None = Field(description="the step that failed; null if none started")
    exit_code: int


class BundleVerification(Frozen):
    schema_: Literal["tinyrustlm.bundle-verification.v1"] = Field(
        "tinyrustlm.bundle-verification.v1", alias="schema"
    )
    ok: bool
    steps: list[StepOutcome]
    error: VerificationError | None = None
    version: str | None = None
    build_id: Sha256Hex | None = None
    keyid: Sha256Hex | None = None
    key_class: Literal["release", "development"] | None = None
    keyids: list[Sha256Hex] | None = Field(
        None, description="every counted manifest signer (keyid is the first)"
    )
