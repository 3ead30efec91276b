"""JSON inputs of the pipeline, through the verifier's one bounded reader.

Every JSON the pipeline reads (policies, build records and indexes, caches, a tool's output)
goes through `verify.inputs`/`verify.canonical.parse_json`: regular files only, size and
depth limits, strict parsing. Its typed errors become `InputRejected` (a `PipelineError`,
exit 3) that keeps the reader's error id and names the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pipeline.errors import PipelineError
from verify.canonical import JsonNotOfItsFormat, parse_json
from verify.errors import VerifyError
from verify.inputs import read_json_file, read_regular_file

M = TypeVar("M", bound=BaseModel)


def _verify_classes(root: type[VerifyError]) -> list[type[VerifyError]]:
    found: list[type[VerifyError]] = []
    for sub in root.__subclasses__():
        found += [sub, *_verify_classes(sub)]
    return found


class PassedOn(PipelineError):
    """A refusal of `verify` passed on under the verifier's own id (one of the ids of
    `verify`'s classes, each in README's table with its hint)."""

    @classmethod
    def ids(cls) -> dict[str, str]:
        return {
            c.error_id: c.default_hint
            for c in _verify_classes(VerifyError)
            if c.error_id != VerifyError.error_id
        }


class InputRejected(PassedOn):
    """An input file or tool output that is unreadable, too large, too deep or not valid
    (the verifier's reader refused it: its id and hint)."""


def read_input(path: Path, what: str, limit: int | None = None) -> bytes:
    """The bytes of regular file `path` (a `what` input of `verify.inputs.LIMITS`)."""
    try:
        return read_regular_file(path, what, limit)
    except VerifyError as exc:
        raise InputRejected(
            exc.message, where=exc.where or str(path), error_id=exc.error_id
        ) from None


def load_json(path: Path, what: str) -> Any:
    """One JSON document from regular file `path` (a `what` input of `verify.inputs.LIMITS`)."""
    try:
        return read_json_file(path, what)
    except VerifyError as exc:
        raise InputRejected(
            exc.message, where=exc.where or str(path), error_id=exc.error_id
        ) from None


def load_model(model: type[M], path: Path, what: str) -> M:
    """`load_json`, then validated as `model`."""
    doc = load_json(path, what)
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InputRejected(
            first["msg"], where=f"{path}: {field}", error_id=JsonNotOfItsFormat.error_id
        ) from None


def parse_output(text: str, where: str) -> Any:
    """One JSON document printed by a tool we ran."""
    try:
        return parse_json(text.encode("utf-8"), where)
    except VerifyError as exc:
        raise InputRejected(exc.message, where=where, error_id=exc.error_id) from None
