"""Step 13 (with the conformance report): memory-plan.json, when present, is a valid
`tinyrustlm.memory-plan.v1` about this release.

Read strictly (canonical JSON's parser: no duplicate key, NaN or excess size; no coercion) by
its model, whose every plan adds up (each phase peak the sum of its parts, the peak their
largest: `verify.formats.memory_plan`); it names this manifest's version and revision, plans
every wasm lane of the manifest and no other, and each plan's artifact is the manifest's.
"""

from __future__ import annotations

from pydantic import ValidationError

from verify.bundle import errors as e
from verify.bundle.layout import MEMORY_PLAN
from verify.canonical import MalformedJson, parse_json
from verify.formats.base import strict_model
from verify.formats.manifest import ModuleManifest
from verify.formats.memory_plan import MEMORY_PLAN_SCHEMA, MemoryPlanDocument


def read_memory_plan(data: bytes) -> MemoryPlanDocument:
    """memory-plan.json by its model, or `MemoryPlanInvalid` naming the field."""
    try:
        return strict_model(MemoryPlanDocument, parse_json(data, MEMORY_PLAN))
    except MalformedJson as exc:
        raise e.MemoryPlanInvalid(exc.message, where=MEMORY_PLAN, offset=exc.offset) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise e.MemoryPlanInvalid(
            f"not a {MEMORY_PLAN_SCHEMA}: {field}: {first['msg']}",
            where=f"{MEMORY_PLAN}: {field}" if field else MEMORY_PLAN,
        ) from exc


def check_memory_plan(data: bytes | None, manifest: ModuleManifest) -> str:
    if data is None:
        return "no memory plan"
    plan = read_memory_plan(data)
    if (plan.release_version, plan.source_revision) != (
        manifest.version,
        manifest.source_revision,
    ):
        raise e.MemoryPlanMismatch(
            f"the plan is of {plan.release_version} at {plan.source_revision[:12]}, the "
            f"manifest of {manifest.version} at {manifest.source_revision[:12]}",
            where=f"{MEMORY_PLAN}: release_version",
        )
    digests = {a.id: a.sha256 for a in manifest.artifacts}
    for i, row in enumerate(plan.plans):
        if digests.get(row.lane) != row.artifact_sha256:
            raise e.MemoryPlanMismatch(
                f"the plan of {row.lane} is of an artifact that is not this manifest's",
                where=f"{MEMORY_PLAN}: plans.{i}.artifact_sha256",
            )
    missing = sorted(set(digests) - set(plan.lanes()))
    if missing:
        raise e.MemoryPlanMismatch(
            f"no plan of the wasm lane(s) {', '.join(missing)}", where=f"{MEMORY_PLAN}: plans"
        )
    return f"memory plan: {len(plan.plans)} plans of {len(plan.lanes())} lane(s), all add up"
