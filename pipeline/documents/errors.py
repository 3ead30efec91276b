"""Errors of the release documents (one table per exit code)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pipeline.errors import CheckFailed, TabledError


class DocumentRefused(TabledError, CheckFailed):
    """A release document would say something untrue or unsafe."""

    table: ClassVar[Mapping[str, str]] = {
        "documents.builder-path": (
            "name builder locations by $WORKSPACE/... or $CARGO_HOME/... (verify.placeholders)"
        ),
        "documents.disable-lane-unknown": "--disable-lane takes the wasm lanes of this release",
        "documents.artifact-changed": "rebuild (tinyrustlm-release build --force) before releasing",
    }


class DocumentError(TabledError):
    """A release document cannot be made from these inputs."""

    table: ClassVar[Mapping[str, str]] = {
        "documents.no-lane-policy": "add the lane to verify/policy/wasm.json",
        "documents.artifact-unreadable": (
            "rebuild (tinyrustlm-release build --force) before releasing"
        ),
        "documents.duplicate-artifact": "give each lane of lanes.toml its own artifact name",
        "documents.no-feature-contract": (
            "every wasm lane needs required/forbidden features for the manifest "
            "(verify/policy/wasm.json)"
        ),
        "documents.manifest-schema": (
            "a bug: the manifest made does not fit its own schema; report it with the message"
        ),
        "documents.provenance-schema": (
            "a bug: the provenance made does not fit in-toto Statement v1; report it with the "
            "message"
        ),
        "documents.sbom-duplicate-ref": (
            "give each lane and input its own name: two SBOM components would share a bom-ref"
        ),
        "documents.sbom-schema": (
            "a bug: the SBOM made is not CycloneDX 1.6; report it with the message"
        ),
    }
