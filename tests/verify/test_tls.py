"""Thread-local storage judged from the bytes (verify/wasm/tls.py, check wasm.tls.per_thread).

The modules are written as text and assembled by the pinned wasm-tools, shaped as wasm-ld
writes a shared-memory module: a TLS base global that the start function sets for the first
instance, and (when the lane links them) the exports a host needs for every other thread.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from verify.checks import WasmFacts, tls_per_thread
from verify.policy import load_wasm_policies
from verify.wasm.inventory import inventory_bytes
from verify.wasm.tools import executable

EXPORTS = """
  (export "__wasm_init_tls" (func $init_tls))
  (export "__tls_base" (global $tls_base))
  (export "__tls_size" (global $tls_size))
  (export "__tls_align" (global $tls_align))
"""


def _module(tmp_path: Path, *, start_sets_base: bool, exports: str, shared: bool = True) -> bytes:
    memory = '(import "env" "memory" (memory 1 1 shared))' if shared else '(memory (export "m") 1)'
    start_body = "i32.const 1024 global.set $tls_base" if start_sets_base else "nop"
    text = f"""(module
  {memory}
  (global $tls_base (mut i32) (i32.const 0))
  (global $tls_size i32 (i32.const 8))
  (global $tls_align i32 (i32.const 4))
  (func $init_tls (param i32) local.get 0 global.set $tls_base)
  (func $init_memory {start_body})
  (start $init_memory)
  {exports}
)"""
    wat = tmp_path / "m.wat"
    wat.write_text(text, encoding="utf-8")
    out = tmp_path / "m.wasm"
    subprocess.run([str(executable()), "parse", str(wat), "-o", str(out)], check=True)
    return out.read_bytes()


def _finding(data: bytes) -> tuple[bool, str]:
    policy = load_wasm_policies()["simd128-threads-wasm32"]
    finding = tls_per_thread(WasmFacts(inventory_bytes(data)), policy)
    return finding.ok, finding.evidence


def test_a_tls_block_without_the_init_exports_is_refused_naming_each(tmp_path: Path) -> None:
    ok, detail = _finding(_module(tmp_path, start_sets_base=True, exports=""))
    assert not ok
    for name in ("__wasm_init_tls", "__tls_base", "__tls_size", "__tls_align"):
        assert name in detail
    assert "address 0" in detail


def test_one_missing_export_is_enough_to_refuse(tmp_path: Path) -> None:
    partial = EXPORTS.replace('(export "__wasm_init_tls" (func $init_tls))', "")
    ok, detail = _finding(_module(tmp_path, start_sets_base=True, exports=partial))
    assert not ok and "does not export __wasm_init_tls" in detail


def test_a_tls_block_with_its_init_exports_passes(tmp_path: Path) -> None:
    data = _module(tmp_path, start_sets_base=True, exports=EXPORTS)
    inventory = inventory_bytes(data)
    assert inventory.tls.holds_tls and inventory.tls.start_writes_globals == 1
    assert _finding(data) == (
        True,
        "thread-local storage, per-thread blocks through __wasm_init_tls",
    )


def test_the_judgement_reads_the_code_not_the_exports(tmp_path: Path) -> None:
    """Exports alone prove nothing: a start function that sets no global holds no TLS block,
    whatever it exports (and a module with TLS but no exports was refused above)."""
    data = _module(tmp_path, start_sets_base=False, exports=EXPORTS)
    assert not inventory_bytes(data).tls.holds_tls
    assert _finding(data)[0]


@pytest.mark.parametrize("exports", ["", EXPORTS])
def test_without_a_shared_memory_there_is_one_thread(tmp_path: Path, exports: str) -> None:
    data = _module(tmp_path, start_sets_base=True, exports=exports, shared=False)
    assert _finding(data) == (True, "no shared memory: one thread, wasm-ld's static TLS block")
