"""Thread-local storage, judged from the final bytes of a module with a shared memory.

wasm-ld gives a shared-memory module that holds thread-locals (std built with atomics keeps
the panic count there) a TLS base global, a passive `.tdata` segment and `__wasm_init_tls`.
Its start function (`__wasm_init_memory`) places the static TLS block for the ONE instance
that initialises memory, by writing the TLS base: every other instance starts with base 0,
and its thread-locals alias address 0 unless the host calls `__wasm_init_tls` with a block of
its own. Whether a module does this is read from the start function's code — it writes a
global exactly when the module has a TLS block — never from an export: rustc 1.96 exports
none of the TLS symbols by itself, so "no `__tls_size` export" means nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.wasm.code import decode_bodies
from verify.wasm.opcodes import OPCODES, key_of
from verify.wasm.sections import WasmModule

# What a host needs to give a thread its own block (crates/wasm/js/worker.js calls them).
TLS_EXPORTS: dict[str, str] = {
    "__wasm_init_tls": "func",
    "__tls_base": "global",
    "__tls_size": "global",
    "__tls_align": "global",
}
_GLOBAL_SET = next(key_of(p, c) for (p, c), op in OPCODES.items() if op.name == "global.set")


@dataclass(frozen=True, slots=True)
class TlsFacts:
    shared_memory: bool
    start_writes_globals: int  # global.set operators in the start function
    exports: tuple[str, ...]  # which of TLS_EXPORTS the module exports with the right kind

    @property
    def holds_tls(self) -> bool:
        return self.shared_memory and self.start_writes_globals > 0

    @property
    def missing_exports(self) -> list[str]:
        return [name for name in TLS_EXPORTS if name not in self.exports]


def tls_facts(module: WasmModule, data: bytes) -> TlsFacts:
    shared = any(imp.limits is not None and imp.limits.shared for imp in module.imports) or any(
        m.shared for m in module.memories
    )
    writes = 0
    imported = sum(imp.kind == "func" for imp in module.imports)
    if module.start is not None and module.start >= imported:
        body = module.bodies[module.start - imported]
        writes = decode_bodies(data, [body], module.start).op_counts.get(_GLOBAL_SET, 0)
    exported = tuple(e.name for e in module.exports if TLS_EXPORTS.get(e.name) == e.kind)
    return TlsFacts(shared, writes, exported)
