"""Step 15, "report.html re-derived": the page a reviewer reads is the verified content.

The page (`verify.bundle.page`) is a function of the bundle's signed documents only. After steps
1-14 established that those documents are the release's, the verifier renders the page again
from them and requires the shipped report.html to be identical, byte for byte; the previous
release the bundle carries for the diff must be an earlier release whose documents belong
together. A page one character off, or one that leaves out a lane, is refused here.
"""

from __future__ import annotations

from collections.abc import Mapping

from verify.bundle.errors import PageMismatch
from verify.bundle.layout import REPORT_PAGE
from verify.bundle.page.inputs import page_inputs
from verify.bundle.page.page import shipped_page


def first_difference(a: bytes, b: bytes) -> int:
    """The offset of the first byte where `a` and `b` differ (the shorter length if one is a
    prefix of the other). verify.section_diff names sections too, but it loads lief: not here,
    where every verification passes."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_page(files: Mapping[str, bytes]) -> str:
    inputs = page_inputs(files)
    derived = shipped_page(inputs, files)
    shipped = files[REPORT_PAGE]
    if shipped != derived:
        raise PageMismatch(
            f"differs from the page re-derived from the verified documents ({len(shipped):,} "
            f"bytes shipped, {len(derived):,} derived)",
            where=REPORT_PAGE,
            offset=first_difference(shipped, derived),
        )
    against = f", diff against {inputs.previous.manifest.version}" if inputs.previous else ""
    return f"{len(derived):,} bytes, identical to the re-derived page{against}"
