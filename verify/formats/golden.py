"""`tinyrustlm.golden-vector.v1`: one operator case from the scalar oracle, with raw inputs.

As in the reference's "Golden-vector record", plus the raw inputs themselves (or a content-
addressed fixture such as a packed model) so a record can be re-run without anything else.
Floats are f32 bit patterns ("0x3f800000"), never decimal text. `input_sha256` is the SHA-256
of the canonical input bytes: for each input in order, its name in UTF-8, one NUL byte, then
its raw bytes (f32/u32 values little-endian, `bytes_hex` decoded, a fixture's sha256 as ASCII).
Files under tests/golden/ hold a JSON list of records, one file per operator.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Annotated, Literal

from pydantic import Field

from verify.formats.base import Frozen, Sha256Hex

GOLDEN_SCHEMA = "tinyrustlm.golden-vector.v1"

F32Bits = Annotated[str, Field(pattern=r"^0x[0-9a-f]{8}$", description="f32 bit pattern")]


class F32Input(Frozen):
    kind: Literal["f32_bits"]
    values: list[F32Bits]


class U32Input(Frozen):
    kind: Literal["u32"]
    values: list[Annotated[int, Field(ge=0, lt=2**32)]]


class BytesInput(Frozen):
    kind: Literal["bytes_hex"]
    hex: Annotated[str, Field(pattern=r"^([0-9a-f]{2})*$")]


class FixtureInput(Frozen):
    kind: Literal["fixture"]
    sha256: Sha256Hex
    produced_by: str = Field(description="the command that recreates the fixture's bytes")


Input = Annotated[F32Input | U32Input | BytesInput | FixtureInput, Field(discriminator="kind")]


class F32Expected(Frozen):
    kind: Literal["f32_bits"]
    values: list[F32Bits]


class U32Expected(Frozen):
    kind: Literal["u32"]
    values: list[Annotated[int, Field(ge=0, lt=2**32)]]


class ResultExpected(Frozen):
    """The operator must fail with this TrResult (e.g. softmax of a NaN)."""

    kind: Literal["result_code"]
    code: int = Field(ge=0, le=20)
    name: str


Expected = Annotated[F32Expected | U32Expected | ResultExpected, Field(discriminator="kind")]


class Tolerance(Frozen):
    """How far a non-normative lane (SIMD, threads) may differ from `expected`."""

    abs: float = Field(ge=0)
    rel: float = Field(ge=0)
    max_ulp: int = Field(ge=0)


class Provenance(Frozen):
    oracle: str = Field(description='e.g. "scalar-rust-v1"')
    source_revision: str = Field(description="commit the oracle was built from")
    generated_utc: str
    command: str = Field(description="the one command that regenerates tests/golden/")


class GoldenVector(Frozen):
    schema_: Literal["tinyrustlm.golden-vector.v1"] = Field(
        "tinyrustlm.golden-vector.v1", alias="schema"
    )
    id: str = Field(description="unique within the file, e.g. q8_matvec.cols-019")
    runtime_semantics: int = Field(ge=1)
    operator: str
    layout: str | None = None
    shape: dict[str, int]
    params: dict[str, str | int] = Field(
        default_factory=dict, description="scalars: ints, or f32 bit patterns as 0x strings"
    )
    inputs: dict[str, Input]
    input_sha256: Sha256Hex
    expected: Expected
    alternate_tolerance: Tolerance | None = Field(
        None, description="null: only bit-exact results conform (scalar lane)"
    )
    provenance: Provenance


def input_bytes(name: str, item: F32Input | U32Input | BytesInput | FixtureInput) -> bytes:
    """The raw bytes an input contributes to `input_sha256`."""
    if isinstance(item, F32Input):
        raw = b"".join(struct.pack("<I", int(v, 16)) for v in item.values)
    elif isinstance(item, U32Input):
        raw = b"".join(struct.pack("<I", v) for v in item.values)
    elif isinstance(item, BytesInput):
        raw = bytes.fromhex(item.hex)
    else:
        raw = item.sha256.encode("ascii")
    return name.encode() + b"\0" + raw


def input_digest(vector: GoldenVector) -> str:
    """Recomputes `input_sha256` from the record's own inputs (in their stored order)."""
    h = hashlib.sha256()
    for name, item in vector.inputs.items():
        h.update(input_bytes(name, item))
    return h.hexdigest()
