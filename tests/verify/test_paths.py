"""What counts as an absolute path string, and which ones the policy prefixes allow."""

from __future__ import annotations

import pytest

from verify.paths import absolute_paths, outside

FOUND = [
    ("home", b"\x00/home/alice/src/lib.rs\x00", ("/home/alice/src/lib.rs",)),
    ("remapped", b"x\x07/src/tinyrustlm/core/lib.rs", ("/src/tinyrustlm/core/lib.rs",)),
    ("windows", b"\x00C:\\Users\\bob\\lib.rs\x00", ("C:\\Users\\bob\\lib.rs",)),
    ("relative-is-not", b"\x00crates/core/src/lib.rs\x00", ()),
    ("one-component-is-not", b"\x00/lib.rs\x00", ()),
    ("short-code-bytes-are-not", b"H\x8b/u/A\x90A:\\-\x00", ()),
]  # fmt: skip


@pytest.mark.parametrize(("data", "paths"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_absolute_paths(data: bytes, paths: tuple[str, ...]) -> None:
    assert absolute_paths(data) == paths


def test_outside_allows_prefix_and_the_directory_itself() -> None:
    paths = ("/usr/src/rustc-1.63.0", "/usr/src/rustc-1.63.0/library/core", "/usr/src/other/x")
    assert outside(paths, ("/usr/src/rustc-1.63.0/",)) == ("/usr/src/other/x",)
