"""What the pinned `wasm-tools print` shows of a module's code: the operator mnemonics."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from verify.wasm.tools import executable


def printed_counts(path: Path) -> Counter[str]:
    """Operator mnemonics in `wasm-tools print` (which omits each function's final `end`, so
    one `end` is counted per printed function)."""
    text = subprocess.run([str(executable()), "print", str(path)], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        word = line.strip()
        if word.startswith("(func"):
            counts["end"] += 1
        elif word and not word.startswith(("(", ")")):
            counts[word.split()[0].rstrip(")")] += 1
    return counts
