"""tests/golden/ against its schema and against an independent Python statement of the scalar
contract (f32ref): every record whose operator the Python side implements must match bit for
bit. Fast: no build needed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from verify.formats.golden import (
    BytesInput,
    F32Expected,
    F32Input,
    GoldenVector,
    ResultExpected,
    U32Expected,
    input_digest,
)

from . import f32ref

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
VECTORS = TypeAdapter(list[GoldenVector])
# Operators the suite must contain (one file each).
OPERATORS = (
    "q8_matvec",
    "q4_matvec",
    "f32_matvec",
    "rmsnorm",
    "rope",
    "softmax",
    "attention",
    "silu_mul",
    "exp_det",
    "pcg32",
    "sampler",
    "e2e_decode",
    "int8_quantize",
    "int8_q8_matvec",
    "int8_q4_matvec",
    "int8_e2e_decode",
)


def load(operator: str) -> list[GoldenVector]:
    return VECTORS.validate_json((GOLDEN / f"{operator}.json").read_bytes())


ALL = [v for op in OPERATORS for v in load(op)]


def floats(v: GoldenVector, name: str) -> list[float]:
    item = v.inputs[name]
    assert isinstance(item, F32Input)
    return [f32ref.from_bits(b) for b in item.values]


def raw(v: GoldenVector, name: str) -> bytes:
    item = v.inputs[name]
    assert isinstance(item, BytesInput)
    return bytes.fromhex(item.hex)


def param_f32(v: GoldenVector, name: str) -> float:
    value = v.params[name]
    assert isinstance(value, str)
    return f32ref.from_bits(value)


# operator -> Python reference producing the expected f32 list (or raising a coded error).
REFERENCES: dict[str, Callable[[GoldenVector], list[float]]] = {
    "q8_matvec": lambda v: f32ref.quant_matvec(raw(v, "w"), floats(v, "x"), v.shape["rows"], False),
    "q4_matvec": lambda v: f32ref.quant_matvec(raw(v, "w"), floats(v, "x"), v.shape["rows"], True),
    "f32_matvec": lambda v: f32ref.f32_matvec(floats(v, "w"), floats(v, "x"), v.shape["rows"]),
    "rmsnorm": lambda v: f32ref.rmsnorm(floats(v, "x"), floats(v, "weight"), param_f32(v, "eps")),
    "rope": lambda v: f32ref.rope(floats(v, "v"), floats(v, "cos"), floats(v, "sin")),
    "softmax": lambda v: f32ref.softmax(floats(v, "scores")),
    "attention": lambda v: f32ref.attention(
        floats(v, "q"),
        floats(v, "keys"),
        floats(v, "values"),
        v.shape["n_heads"],
        v.shape["n_kv_heads"],
        v.shape["head_dim"],
        v.shape["n_pos"],
    ),
    "silu_mul": lambda v: [
        f32ref.f32(f32ref.silu(g) * u)
        for g, u in zip(floats(v, "gate"), floats(v, "up"), strict=True)
    ],
    "exp_det": lambda v: [f32ref.exp_det(x) for x in floats(v, "x")],
}


def test_every_operator_file_is_present_and_nonempty() -> None:
    present = {p.stem for p in GOLDEN.glob("*.json")}
    assert present == set(OPERATORS)
    assert all(load(op) for op in OPERATORS)


@pytest.mark.parametrize("vector", ALL, ids=[v.id for v in ALL])
def test_input_sha256_matches_the_raw_inputs(vector: GoldenVector) -> None:
    assert input_digest(vector) == vector.input_sha256


def test_ids_are_unique() -> None:
    ids = [v.id for v in ALL]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("layout,operator", [("q8", "q8_matvec"), ("q4", "q4_matvec")])
def test_every_tail_length_up_to_two_blocks_is_covered(layout: str, operator: str) -> None:
    assert sorted(v.shape["cols"] for v in load(operator)) == list(range(1, 2 * f32ref.BLOCK + 1))


CHECKED = [v for v in ALL if v.operator in REFERENCES]


@pytest.mark.parametrize("vector", CHECKED, ids=[v.id for v in CHECKED])
def test_oracle_matches_the_python_contract_bit_for_bit(vector: GoldenVector) -> None:
    reference = REFERENCES[vector.operator]
    expected = vector.expected
    if isinstance(expected, ResultExpected):
        with pytest.raises((f32ref.NumericalFailure, f32ref.InvalidArgument)) as caught:
            reference(vector)
        assert getattr(caught.value, "code", None) == expected.code
        return
    assert isinstance(expected, F32Expected)
    got = [f32ref.to_bits(x) for x in reference(vector)]
    assert got == expected.values


PCG = load("pcg32")


@pytest.mark.parametrize("vector", PCG, ids=[v.id for v in PCG])
def test_pcg32_known_values(vector: GoldenVector) -> None:
    seed, stream = vector.params["seed"], vector.params["stream"]
    assert isinstance(seed, int) and isinstance(stream, int)
    rng = f32ref.Pcg32(seed, stream)
    assert isinstance(vector.expected, U32Expected)
    assert [rng.next_u32() for _ in vector.expected.values] == vector.expected.values


def test_pcg32_reference_demo_values() -> None:
    # O'Neill's pcg32-demo: pcg32_srandom_r(&rng, 42u, 54u).
    rng = f32ref.Pcg32(42, 54)
    assert [rng.next_u32() for _ in range(3)] == [0xA15C02B7, 0x7B47F409, 0xBA1D3330]


def test_records_round_trip_through_the_model() -> None:
    for op in OPERATORS:
        data = json.loads((GOLDEN / f"{op}.json").read_text(encoding="utf-8"))
        again = [json.loads(v.model_dump_json(by_alias=True)) for v in load(op)]
        assert again == data
