"""Exception handling in function bodies against the real wasm-tools (issue 26).

Every shape of both proposals — legacy `try`/`catch`/`catch_all`/`rethrow`/`delegate` and
`try_table` with each catch kind (catch, catch_ref, catch_all, catch_all_ref), `throw`,
`throw_ref`, nesting, branches out of handlers — is written as WAT, assembled and validated
by the pinned `wasm-tools`, and must parse here with exactly the operators `wasm-tools print`
shows. The deep cases nest more than 128 (and 256) frames, so branch depths are two-byte LEBs
whose first byte is still below the open depth: a production EH module with deep landing
pads was refused as "function body ended prematurely" when the one-byte branch fast path took
such a byte for a whole depth.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.verify.printed import printed_counts
from verify.wasm.opcodes import op_by_key
from verify.wasm.sections import parse_module
from verify.wasm.tools import executable


def _deep(n: int, *inner: str) -> str:
    """`inner` inside `n` nested blocks."""
    return "\n".join(["block"] * n + list(inner) + ["end"] * n)


CASES: dict[str, str] = {
    "legacy-try-catch-catch-all-rethrow": """
      (func (result i32)
        try (result i32)
          i32.const 1
          throw $t
        catch $t
        catch_all
          rethrow 0
        end)""",
    "legacy-rethrow-from-nested-block": """
      (func
        try
          throw $e
        catch $e
          block
            rethrow 1
          end
        end)""",
    "legacy-delegate-to-function-and-outer-try": """
      (func
        try $outer
          try
            throw $e
          delegate $outer
          try
            nop
          delegate 1
        catch_all
        end)""",
    "try-table-each-catch-kind": """
      (func (result i32)
        (block $all_ref (result exnref)
          (block $all
            (block $ref (result i32 exnref)
              (block $one (result i32)
                try_table (catch $t $one) (catch_ref $t $ref) (catch_all $all)
                          (catch_all_ref $all_ref)
                  i32.const 7
                  throw $t
                end
                unreachable)
              return)
            drop
            return)
          i32.const 0
          return)
        throw_ref)""",
    "try-table-type-index-blocktype-and-branches": """
      (func (param i32) (result i32)
        (block $out (result i32)
          local.get 0
          try_table (type $pp) (catch $t $out)
            i32.const 1
            i32.add
            local.get 0
            br_if $out
            local.get 0
            br_table 0 1 0
          end))""",
    "try-table-inside-legacy-catch-and-back": """
      (func (local exnref)
        try
          throw $e
        catch_all
          (block $h (result exnref)
            try_table (catch_all_ref $h)
              try
                throw $e
              catch $e
                rethrow 0
              end
            end
            ref.null exn
          )
          local.set 0
        end
        local.get 0
        ref.is_null
        br_if 0
        local.get 0
        throw_ref)""",
    "deep-br-two-byte-labels": f"""
      (func
        (block $h (result exnref)
          try_table (catch_all_ref $h)
            {_deep(200, "i32.const 0", "br_if 129", "br 150")}
            throw $e
          end
          unreachable)
        throw_ref)""",
    "deeper-br-second-byte-is-block": f"""
      (func
        try_table (catch_all 0)
          {_deep(300, "i32.const 0", "br_if 258", "br 290")}
        end)""",
    "deep-catch-rethrow-delegate-labels": f"""
      (func
        try
          {_deep(140, "try", "throw $e", "delegate 139")}
        catch_all
          {_deep(140, "rethrow 140")}
        end
        {_deep(140, "try_table (catch_all 139) (catch $e 130)", "end")})""",
}


def _module(body: str) -> str:
    return f"""(module
      (type $pp (func (param i32) (result i32)))
      (tag $t (param i32))
      (tag $e)
      {body})"""


@pytest.mark.parametrize("body", CASES.values(), ids=CASES.keys())
def test_exception_handling_parses_as_wasm_tools_prints_it(body: str, tmp_path: Path) -> None:
    wat, wasm = tmp_path / "m.wat", tmp_path / "m.wasm"
    wat.write_text(_module(body))
    tool = str(executable())
    subprocess.run([tool, "parse", str(wat), "-o", str(wasm)], check=True, capture_output=True)
    valid = subprocess.run([tool, "validate", "--features=all", str(wasm)], capture_output=True)
    assert valid.returncode == 0, valid.stderr.decode()  # the case itself is valid Wasm
    module = parse_module(wasm.read_bytes())
    ours: Counter[str] = Counter()
    for key, count in module.code.op_counts.items():
        ours[op_by_key(key).name] += count
    assert ours == printed_counts(wasm)
