"""THE operator table: (prefix, code) -> name, proposal, immediate kinds.

One row per operator, grouped by proposal as in wasmparser's `for_each_operator!`.
Prefix 0 means a single-byte opcode; 0xFC, 0xFD and 0xFE are followed by a u32 LEB code.
Memory64 and multi-memory add no operators: they change immediates (a memarg's memory
index and 64-bit offset, non-zero memory indices), which `code.py` reports as facts.
Extended-const adds no operators either: it allows i32/i64 add, sub, mul in constant
expressions (see sections.py); call-indirect-overlong changes call_indirect's encoding
(code.py). Everything else (decoder shapes, proposal sets) derives from this table.

Checked against wasmparser (tests/verify/test_operator_table.py and its snapshot): every
operator of the proposals LLVM 22 can emit is here. Left out, so refused as unknown opcodes
like any byte we cannot judge: stack switching (0xe0-0xe6), custom descriptors (0xfb
0x20-0x26), shared-everything-threads (0xfe 0x4f-0x72), memory-control (memory.discard),
and fp16 (which wasm-tools does not know either).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from verify.wasm.features import Proposal


class Imm(enum.IntEnum):
    """Immediate kinds, in encoding order within an operator."""

    BLOCKTYPE = 1  # s33: 0x40, a value type, or a type index
    LABEL = 2  # u32 relative depth
    BR_TABLE = 3  # vec(u32) + u32 default
    FUNC = 4
    TYPE = 5
    TABLE = 6  # u32 table index (0x00 byte in MVP)
    LOCAL = 7
    GLOBAL = 8
    MEMARG = 9  # u32 align (bit 6: memory index follows), [u32 memidx], u64 offset
    MEM = 10  # u32 memory index (0x00 byte in MVP)
    I32 = 11  # s32
    I64 = 12  # s64
    F32 = 13  # 4 bytes
    F64 = 14  # 8 bytes
    V128 = 15  # 16 bytes
    LANE = 16  # 1 byte lane index
    SHUFFLE = 17  # 16 lane bytes
    DATA = 18
    ELEM = 19
    TAG = 20
    SELECT_T = 21  # vec(valtype)
    HEAPTYPE = 22  # s33
    TRY_TABLE = 23  # blocktype + vec(catch clause)
    ZERO = 24  # one reserved 0x00 byte
    U32 = 25  # a u32 that is no index of its own kind (struct field, array length)
    BR_ON_CAST = 26  # cast flags byte, u32 label, heap type, heap type


@dataclass(frozen=True, slots=True)
class Op:
    prefix: int
    code: int
    name: str
    proposal: Proposal
    imms: tuple[Imm, ...]


_P = Proposal
_I = Imm
_ML = (_I.MEMARG, _I.LANE)
Row = tuple[int, int, str, tuple[Imm, ...]]


def _words(text: str) -> list[str]:
    return text.split()


# ---- rows: (prefix, code, name, immediates), grouped by proposal ----
_MVP_CONTROL: list[Row] = [
    (0, 0x00, "unreachable", ()),
    (0, 0x01, "nop", ()),
    (0, 0x02, "block", (_I.BLOCKTYPE,)),
    (0, 0x03, "loop", (_I.BLOCKTYPE,)),
    (0, 0x04, "if", (_I.BLOCKTYPE,)),
    (0, 0x05, "else", ()),
    (0, 0x0B, "end", ()),
    (0, 0x0C, "br", (_I.LABEL,)),
    (0, 0x0D, "br_if", (_I.LABEL,)),
    (0, 0x0E, "br_table", (_I.BR_TABLE,)),
    (0, 0x0F, "return", ()),
    (0, 0x10, "call", (_I.FUNC,)),
    (0, 0x11, "call_indirect", (_I.TYPE, _I.TABLE)),
    (0, 0x1A, "drop", ()),
    (0, 0x1B, "select", ()),
    (0, 0x20, "local.get", (_I.LOCAL,)),
    (0, 0x21, "local.set", (_I.LOCAL,)),
    (0, 0x22, "local.tee", (_I.LOCAL,)),
    (0, 0x23, "global.get", (_I.GLOBAL,)),
    (0, 0x24, "global.set", (_I.GLOBAL,)),
    (0, 0x3F, "memory.size", (_I.MEM,)),
    (0, 0x40, "memory.grow", (_I.MEM,)),
    (0, 0x41, "i32.const", (_I.I32,)),
    (0, 0x42, "i64.const", (_I.I64,)),
    (0, 0x43, "f32.const", (_I.F32,)),
    (0, 0x44, "f64.const", (_I.F64,)),
]
_MVP_MEMORY: list[Row] = [
    (0, 0x28 + i, name, (_I.MEMARG,))
    for i, name in enumerate(
        _words(
            "i32.load i64.load f32.load f64.load i32.load8_s i32.load8_u i32.load16_s i32.load16_u "
            "i64.load8_s i64.load8_u i64.load16_s i64.load16_u i64.load32_s i64.load32_u "
            "i32.store i64.store f32.store f64.store i32.store8 i32.store16 "
            "i64.store8 i64.store16 i64.store32"
        )
    )
]
_MVP_NUMERIC: list[Row] = [
    (0, 0x45 + i, name, ())
    for i, name in enumerate(
        _words(
            "i32.eqz i32.eq i32.ne i32.lt_s i32.lt_u i32.gt_s i32.gt_u i32.le_s i32.le_u i32.ge_s "
            "i32.ge_u i64.eqz i64.eq i64.ne i64.lt_s i64.lt_u i64.gt_s i64.gt_u i64.le_s i64.le_u "
            "i64.ge_s i64.ge_u f32.eq f32.ne f32.lt f32.gt f32.le f32.ge f64.eq f64.ne f64.lt "
            "f64.gt f64.le f64.ge i32.clz i32.ctz i32.popcnt i32.add i32.sub i32.mul i32.div_s "
            "i32.div_u i32.rem_s i32.rem_u i32.and i32.or i32.xor i32.shl i32.shr_s i32.shr_u "
            "i32.rotl i32.rotr i64.clz i64.ctz i64.popcnt i64.add i64.sub i64.mul i64.div_s "
            "i64.div_u i64.rem_s i64.rem_u i64.and i64.or i64.xor i64.shl i64.shr_s i64.shr_u "
            "i64.rotl i64.rotr f32.abs f32.neg f32.ceil f32.floor f32.trunc f32.nearest f32.sqrt "
            "f32.add f32.sub f32.mul f32.div f32.min f32.max f32.copysign f64.abs f64.neg "
            "f64.ceil f64.floor f64.trunc f64.nearest f64.sqrt f64.add f64.sub f64.mul f64.div "
            "f64.min f64.max f64.copysign i32.wrap_i64 i32.trunc_f32_s i32.trunc_f32_u "
            "i32.trunc_f64_s i32.trunc_f64_u i64.extend_i32_s i64.extend_i32_u i64.trunc_f32_s "
            "i64.trunc_f32_u i64.trunc_f64_s i64.trunc_f64_u f32.convert_i32_s f32.convert_i32_u "
            "f32.convert_i64_s f32.convert_i64_u f32.demote_f64 f64.convert_i32_s "
            "f64.convert_i32_u f64.convert_i64_s f64.convert_i64_u f64.promote_f32 "
            "i32.reinterpret_f32 i64.reinterpret_f64 f32.reinterpret_i32 f64.reinterpret_i64"
        )
    )
]
_SIGN_EXTENSION: list[Row] = [
    (0, 0xC0 + i, name, ())
    for i, name in enumerate(
        _words("i32.extend8_s i32.extend16_s i64.extend8_s i64.extend16_s i64.extend32_s")
    )
]
_SATURATING: list[Row] = [
    (0xFC, i, name, ())
    for i, name in enumerate(
        _words(
            "i32.trunc_sat_f32_s i32.trunc_sat_f32_u i32.trunc_sat_f64_s i32.trunc_sat_f64_u "
            "i64.trunc_sat_f32_s i64.trunc_sat_f32_u i64.trunc_sat_f64_s i64.trunc_sat_f64_u"
        )
    )
]
_BULK_MEMORY: list[Row] = [
    (0xFC, 0x08, "memory.init", (_I.DATA, _I.MEM)),
    (0xFC, 0x09, "data.drop", (_I.DATA,)),
    (0xFC, 0x0C, "table.init", (_I.ELEM, _I.TABLE)),
    (0xFC, 0x0D, "elem.drop", (_I.ELEM,)),
    (0xFC, 0x0E, "table.copy", (_I.TABLE, _I.TABLE)),
]
# wasmparser lists these under bulk memory but validates them with `bulk_memory_opt`.
_BULK_MEMORY_OPT: list[Row] = [
    (0xFC, 0x0A, "memory.copy", (_I.MEM, _I.MEM)),
    (0xFC, 0x0B, "memory.fill", (_I.MEM,)),
]
_REFERENCE_TYPES: list[Row] = [
    (0, 0x1C, "select", (_I.SELECT_T,)),  # typed select, printed as `select (result t)`
    (0, 0x25, "table.get", (_I.TABLE,)),
    (0, 0x26, "table.set", (_I.TABLE,)),
    (0, 0xD0, "ref.null", (_I.HEAPTYPE,)),
    (0, 0xD1, "ref.is_null", ()),
    (0, 0xD2, "ref.func", (_I.FUNC,)),
    (0xFC, 0x0F, "table.grow", (_I.TABLE,)),
    (0xFC, 0x10, "table.size", (_I.TABLE,)),
    (0xFC, 0x11, "table.fill", (_I.TABLE,)),
]
_TAIL_CALL: list[Row] = [
    (0, 0x12, "return_call", (_I.FUNC,)),
    (0, 0x13, "return_call_indirect", (_I.TYPE, _I.TABLE)),
]
_FUNCTION_REFERENCES: list[Row] = [
    (0, 0x14, "call_ref", (_I.TYPE,)),
    (0, 0x15, "return_call_ref", (_I.TYPE,)),
    (0, 0xD4, "ref.as_non_null", ()),
    (0, 0xD5, "br_on_null", (_I.LABEL,)),
    (0, 0xD6, "br_on_non_null", (_I.LABEL,)),
]
_TYPE_FIELD = (_I.TYPE, _I.U32)
_GC: list[Row] = [
    (0, 0xD3, "ref.eq", ()),
    (0xFB, 0x00, "struct.new", (_I.TYPE,)),
    (0xFB, 0x01, "struct.new_default", (_I.TYPE,)),
    (0xFB, 0x02, "struct.get", _TYPE_FIELD),
    (0xFB, 0x03, "struct.get_s", _TYPE_FIELD),
    (0xFB, 0x04, "struct.get_u", _TYPE_FIELD),
    (0xFB, 0x05, "struct.set", _TYPE_FIELD),
    (0xFB, 0x06, "array.new", (_I.TYPE,)),
    (0xFB, 0x07, "array.new_default", (_I.TYPE,)),
    (0xFB, 0x08, "array.new_fixed", _TYPE_FIELD),
    (0xFB, 0x09, "array.new_data", (_I.TYPE, _I.DATA)),
    (0xFB, 0x0A, "array.new_elem", (_I.TYPE, _I.ELEM)),
    (0xFB, 0x0B, "array.get", (_I.TYPE,)),
    (0xFB, 0x0C, "array.get_s", (_I.TYPE,)),
    (0xFB, 0x0D, "array.get_u", (_I.TYPE,)),
    (0xFB, 0x0E, "array.set", (_I.TYPE,)),
    (0xFB, 0x0F, "array.len", ()),
    (0xFB, 0x10, "array.fill", (_I.TYPE,)),
    (0xFB, 0x11, "array.copy", (_I.TYPE, _I.TYPE)),
    (0xFB, 0x12, "array.init_data", (_I.TYPE, _I.DATA)),
    (0xFB, 0x13, "array.init_elem", (_I.TYPE, _I.ELEM)),
    (0xFB, 0x14, "ref.test", (_I.HEAPTYPE,)),  # (ref ht): LLVM's function-pointer test
    (0xFB, 0x15, "ref.test", (_I.HEAPTYPE,)),  # (ref null ht); print names both ref.test
    (0xFB, 0x16, "ref.cast", (_I.HEAPTYPE,)),
    (0xFB, 0x17, "ref.cast", (_I.HEAPTYPE,)),
    (0xFB, 0x18, "br_on_cast", (_I.BR_ON_CAST,)),
    (0xFB, 0x19, "br_on_cast_fail", (_I.BR_ON_CAST,)),
    (0xFB, 0x1A, "any.convert_extern", ()),
    (0xFB, 0x1B, "extern.convert_any", ()),
    (0xFB, 0x1C, "ref.i31", ()),
    (0xFB, 0x1D, "i31.get_s", ()),
    (0xFB, 0x1E, "i31.get_u", ()),
]
_WIDE_ARITHMETIC: list[Row] = [
    (0xFC, 0x13 + i, name, ())
    for i, name in enumerate(_words("i64.add128 i64.sub128 i64.mul_wide_s i64.mul_wide_u"))
]
_EXCEPTIONS: list[Row] = [
    (0, 0x08, "throw", (_I.TAG,)),
    (0, 0x0A, "throw_ref", ()),
    (0, 0x1F, "try_table", (_I.TRY_TABLE,)),
]
_LEGACY_EXCEPTIONS: list[Row] = [
    (0, 0x06, "try", (_I.BLOCKTYPE,)),
    (0, 0x07, "catch", (_I.TAG,)),
    (0, 0x09, "rethrow", (_I.LABEL,)),
    (0, 0x18, "delegate", (_I.LABEL,)),
    (0, 0x19, "catch_all", ()),
]

# SIMD128: 0xFD codes 0x00..0xFF; "." marks the reserved (unassigned) codes.
_SIMD_NAMES = _words(
    "v128.load v128.load8x8_s v128.load8x8_u v128.load16x4_s v128.load16x4_u v128.load32x2_s "
    "v128.load32x2_u v128.load8_splat v128.load16_splat v128.load32_splat v128.load64_splat "
    "v128.store v128.const i8x16.shuffle i8x16.swizzle i8x16.splat i16x8.splat i32x4.splat "
    "i64x2.splat f32x4.splat f64x2.splat i8x16.extract_lane_s i8x16.extract_lane_u "
    "i8x16.replace_lane i16x8.extract_lane_s i16x8.extract_lane_u i16x8.replace_lane "
    "i32x4.extract_lane i32x4.replace_lane i64x2.extract_lane i64x2.replace_lane "
    "f32x4.extract_lane f32x4.replace_lane f64x2.extract_lane f64x2.replace_lane "
    "i8x16.eq i8x16.ne i8x16.lt_s i8x16.lt_u i8x16.gt_s i8x16.gt_u i8x16.le_s i8x16.le_u "
    "i8x16.ge_s i8x16.ge_u i16x8.eq i16x8.ne i16x8.lt_s i16x8.lt_u i16x8.gt_s i16x8.gt_u "
    "i16x8.le_s i16x8.le_u i16x8.ge_s i16x8.ge_u i32x4.eq i32x4.ne i32x4.lt_s i32x4.lt_u "
    "i32x4.gt_s i32x4.gt_u i32x4.le_s i32x4.le_u i32x4.ge_s i32x4.ge_u f32x4.eq f32x4.ne "
    "f32x4.lt f32x4.gt f32x4.le f32x4.ge f64x2.eq f64x2.ne f64x2.lt f64x2.gt f64x2.le "
    "f64x2.ge v128.not v128.and v128.andnot v128.or v128.xor v128.bitselect v128.any_true "
    "v128.load8_lane v128.load16_lane v128.load32_lane v128.load64_lane v128.store8_lane "
    "v128.store16_lane v128.store32_lane v128.store64_lane v128.load32_zero v128.load64_zero "
    "f32x4.demote_f64x2_zero f64x2.promote_low_f32x4 i8x16.abs i8x16.neg i8x16.popcnt "
    "i8x16.all_true i8x16.bitmask i8x16.narrow_i16x8_s i8x16.narrow_i16x8_u f32x4.ceil "
    "f32x4.floor f32x4.trunc f32x4.nearest i8x16.shl i8x16.shr_s i8x16.shr_u i8x16.add "
    "i8x16.add_sat_s i8x16.add_sat_u i8x16.sub i8x16.sub_sat_s i8x16.sub_sat_u f64x2.ceil "
    "f64x2.floor i8x16.min_s i8x16.min_u i8x16.max_s i8x16.max_u f64x2.trunc i8x16.avgr_u "
    "i16x8.extadd_pairwise_i8x16_s i16x8.extadd_pairwise_i8x16_u "
    "i32x4.extadd_pairwise_i16x8_s i32x4.extadd_pairwise_i16x8_u i16x8.abs i16x8.neg "
    "i16x8.q15mulr_sat_s i16x8.all_true i16x8.bitmask i16x8.narrow_i32x4_s "
    "i16x8.narrow_i32x4_u i16x8.extend_low_i8x16_s i16x8.extend_high_i8x16_s "
    "i16x8.extend_low_i8x16_u i16x8.extend_high_i8x16_u i16x8.shl i16x8.shr_s i16x8.shr_u "
    "i16x8.add i16x8.add_sat_s i16x8.add_sat_u i16x8.sub i16x8.sub_sat_s i16x8.sub_sat_u "
    "f64x2.nearest i16x8.mul i16x8.min_s i16x8.min_u i16x8.max_s i16x8.max_u . "
    "i16x8.avgr_u i16x8.extmul_low_i8x16_s i16x8.extmul_high_i8x16_s "
    "i16x8.extmul_low_i8x16_u i16x8.extmul_high_i8x16_u i32x4.abs i32x4.neg . "
    "i32x4.all_true i32x4.bitmask . . i32x4.extend_low_i16x8_s i32x4.extend_high_i16x8_s "
    "i32x4.extend_low_i16x8_u i32x4.extend_high_i16x8_u i32x4.shl i32x4.shr_s i32x4.shr_u "
    "i32x4.add . . i32x4.sub . . . i32x4.mul i32x4.min_s i32x4.min_u i32x4.max_s "
    "i32x4.max_u i32x4.dot_i16x8_s . i32x4.extmul_low_i16x8_s i32x4.extmul_high_i16x8_s "
    "i32x4.extmul_low_i16x8_u i32x4.extmul_high_i16x8_u i64x2.abs i64x2.neg . "
    "i64x2.all_true i64x2.bitmask . . i64x2.extend_low_i32x4_s i64x2.extend_high_i32x4_s "
    "i64x2.extend_low_i32x4_u i64x2.extend_high_i32x4_u i64x2.shl i64x2.shr_s i64x2.shr_u "
    "i64x2.add . . i64x2.sub . . . i64x2.mul i64x2.eq i64x2.ne i64x2.lt_s i64x2.gt_s "
    "i64x2.le_s i64x2.ge_s i64x2.extmul_low_i32x4_s i64x2.extmul_high_i32x4_s "
    "i64x2.extmul_low_i32x4_u i64x2.extmul_high_i32x4_u f32x4.abs f32x4.neg . f32x4.sqrt "
    "f32x4.add f32x4.sub f32x4.mul f32x4.div f32x4.min f32x4.max f32x4.pmin f32x4.pmax "
    "f64x2.abs f64x2.neg . f64x2.sqrt f64x2.add f64x2.sub f64x2.mul f64x2.div f64x2.min "
    "f64x2.max f64x2.pmin f64x2.pmax i32x4.trunc_sat_f32x4_s i32x4.trunc_sat_f32x4_u "
    "f32x4.convert_i32x4_s f32x4.convert_i32x4_u i32x4.trunc_sat_f64x2_s_zero "
    "i32x4.trunc_sat_f64x2_u_zero f64x2.convert_low_i32x4_s f64x2.convert_low_i32x4_u"
)
# Immediates of the SIMD operators that have any; all others take none.
_SIMD_IMMS: dict[int, tuple[Imm, ...]] = {
    **{code: (_I.MEMARG,) for code in (*range(0x00, 0x0C), 0x5C, 0x5D)},
    0x0C: (_I.V128,),
    0x0D: (_I.SHUFFLE,),
    **{code: (_I.LANE,) for code in range(0x15, 0x23)},
    **{code: _ML for code in range(0x54, 0x5C)},
}
_SIMD: list[Row] = [
    (0xFD, code, name, _SIMD_IMMS.get(code, ()))
    for code, name in enumerate(_SIMD_NAMES)
    if name != "."
]
_RELAXED_SIMD: list[Row] = [
    (0xFD, 0x100 + i, name, ())
    for i, name in enumerate(
        _words(
            "i8x16.relaxed_swizzle i32x4.relaxed_trunc_f32x4_s i32x4.relaxed_trunc_f32x4_u "
            "i32x4.relaxed_trunc_f64x2_s_zero i32x4.relaxed_trunc_f64x2_u_zero f32x4.relaxed_madd "
            "f32x4.relaxed_nmadd f64x2.relaxed_madd f64x2.relaxed_nmadd i8x16.relaxed_laneselect "
            "i16x8.relaxed_laneselect i32x4.relaxed_laneselect i64x2.relaxed_laneselect "
            "f32x4.relaxed_min f32x4.relaxed_max f64x2.relaxed_min f64x2.relaxed_max "
            "i16x8.relaxed_q15mulr_s i16x8.relaxed_dot_i8x16_i7x16_s "
            "i32x4.relaxed_dot_i8x16_i7x16_add_s"
        )
    )
]


def _rmw_rows() -> list[Row]:
    rows: list[Row] = []
    widths = (
        "i32.atomic.rmw",
        "i64.atomic.rmw",
        "i32.atomic.rmw8",
        "i32.atomic.rmw16",
        "i64.atomic.rmw8",
        "i64.atomic.rmw16",
        "i64.atomic.rmw32",
    )
    for k, op in enumerate(("add", "sub", "and", "or", "xor", "xchg", "cmpxchg")):
        for w, width in enumerate(widths):
            suffix = "" if w < 2 else "_u"
            rows.append((0xFE, 0x1E + 7 * k + w, f"{width}.{op}{suffix}", (_I.MEMARG,)))
    return rows


_THREADS: list[Row] = [
    (0xFE, 0x00, "memory.atomic.notify", (_I.MEMARG,)),
    (0xFE, 0x01, "memory.atomic.wait32", (_I.MEMARG,)),
    (0xFE, 0x02, "memory.atomic.wait64", (_I.MEMARG,)),
    (0xFE, 0x03, "atomic.fence", (_I.ZERO,)),
    *[
        (0xFE, 0x10 + i, name, (_I.MEMARG,))
        for i, name in enumerate(
            _words(
                "i32.atomic.load i64.atomic.load i32.atomic.load8_u i32.atomic.load16_u "
                "i64.atomic.load8_u i64.atomic.load16_u i64.atomic.load32_u i32.atomic.store "
                "i64.atomic.store i32.atomic.store8 i32.atomic.store16 i64.atomic.store8 "
                "i64.atomic.store16 i64.atomic.store32"
            )
        )
    ],
    *_rmw_rows(),
]

_GROUPS: list[tuple[Proposal, list[Row]]] = [
    (_P.MVP, _MVP_CONTROL + _MVP_MEMORY + _MVP_NUMERIC),
    (_P.SIGN_EXTENSION, _SIGN_EXTENSION),
    (_P.SATURATING_FLOAT_TO_INT, _SATURATING),
    (_P.BULK_MEMORY, _BULK_MEMORY),
    (_P.BULK_MEMORY_OPT, _BULK_MEMORY_OPT),
    (_P.REFERENCE_TYPES, _REFERENCE_TYPES),
    (_P.TAIL_CALL, _TAIL_CALL),
    (_P.FUNCTION_REFERENCES, _FUNCTION_REFERENCES),
    (_P.GC, _GC),
    (_P.WIDE_ARITHMETIC, _WIDE_ARITHMETIC),
    (_P.EXCEPTIONS, _EXCEPTIONS),
    (_P.LEGACY_EXCEPTIONS, _LEGACY_EXCEPTIONS),
    (_P.SIMD, _SIMD),
    (_P.RELAXED_SIMD, _RELAXED_SIMD),
    (_P.THREADS, _THREADS),
]


def _build() -> dict[tuple[int, int], Op]:
    table: dict[tuple[int, int], Op] = {}
    interned: dict[tuple[Imm, ...], tuple[Imm, ...]] = {}  # equal tuples -> one object
    for proposal, rows in _GROUPS:
        for prefix, code, name, raw_imms in rows:
            imms = interned.setdefault(raw_imms, raw_imms)
            key = (prefix, code)
            if key in table:
                raise AssertionError(f"opcode {key} listed twice ({table[key].name}, {name})")
            table[key] = Op(prefix, code, name, proposal, imms)
    return table


OPCODES: dict[tuple[int, int], Op] = _build()
PREFIXES: frozenset[int] = frozenset(p for p, _ in OPCODES if p)


def key_of(prefix: int, code: int) -> int:
    """A flat integer key for counters: single-byte ops are 0..255, prefixed ones above."""
    return (prefix << 16) | code if prefix else code


def op_by_key(key: int) -> Op:
    return OPCODES[(key >> 16, key & 0xFFFF) if key > 0xFF else (0, key)]


def names_of(proposal: Proposal) -> frozenset[str]:
    """The operator names of exactly `proposal` (e.g. every relaxed-SIMD instruction)."""
    return frozenset(op.name for op in OPCODES.values() if op.proposal is proposal)
