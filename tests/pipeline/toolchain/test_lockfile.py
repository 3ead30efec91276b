"""toolchain.lock parsing: the committed lock is valid; each kind of malformation is named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.toolchain.lockfile import LockError, load_lock, load_seed, render_lock

LOCK = Path(__file__).resolve().parents[3] / "toolchain.lock"


def test_committed_lock_parses_and_renders_back_to_itself() -> None:
    lock = load_lock(LOCK)
    assert lock.rustc.release == "1.96.0"
    assert lock.rustc.llvm_version.startswith("22.")
    # nothing of the 2022 compiler remains
    assert "1.63" not in LOCK.read_text(encoding="utf-8")
    assert not any(
        p.name.startswith(("rustc", "cargo")) and "web" not in p.name for p in lock.package
    )
    assert render_lock(lock) == LOCK.read_text(encoding="utf-8")


def test_committed_seed_and_lock_name_the_same_packages() -> None:
    seed = load_seed(LOCK.parent / "manifests" / "toolchain.toml")
    lock = load_lock(LOCK)
    assert [p.spec for p in seed.packages] == [p.spec for p in lock.package]


def _nth_package_block(text: str, n: int) -> tuple[int, int]:
    starts = [m.start() for m in re.finditer(r"^\[\[package\]\]$", text, re.M)]
    end = text.index("\n[", starts[n] + 1)
    return starts[n], end


def _drop_key(text: str, key: str, package: int) -> str:
    start, end = _nth_package_block(text, package)
    block = re.sub(rf"^{key} = .*\n", "", text[start:end], count=1, flags=re.M)
    return text[:start] + block + text[end:]


def _line_of_package(text: str, package: int) -> int:
    start, _ = _nth_package_block(text, package)
    return text[:start].count("\n") + 1


MALFORMED = {
    "missing-field": (lambda t: _drop_key(t, "sha256", 2), "package.2.sha256", "package2"),
    "wrong-type": (
        lambda t: t.replace("\nsize = ", '\nsize = "', 1).replace(
            '\nsha256 = "8', '"\nsha256 = "8', 1
        ),
        "package.0.size",
        None,
    ),
    "bad-sha256": (
        lambda t: t.replace('\nsha256 = "8', '\nsha256 = "zz8', 1),
        "package.0.sha256",
        None,
    ),
    "bad-commit-hash": (
        lambda t: t.replace('commit_hash = "', 'commit_hash = "g', 1),
        "rustc.commit_hash",
        None,
    ),
    "missing-std-source": (
        lambda t: t.replace("[std_source]", "[std_sources]"),
        "std_source",
        None,
    ),
    "unknown-schema": (
        lambda t: t.replace("toolchain-lock.v2", "toolchain-lock.v9"),
        "schema",
        None,
    ),
    "unknown-field": (
        lambda t: t.replace("[rustc]\n", '[rustc]\nflavour = "nightly"\n'),
        "rustc.flavour",
        None,
    ),
    "missing-table": (lambda t: t.replace("[rustc]", "[rustc_]"), "rustc", None),
}


@pytest.mark.parametrize("case", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_lock_names_field_and_line(
    case: tuple[object, str, str | None], tmp_path: Path
) -> None:
    mutate, field, _ = case
    text = LOCK.read_text(encoding="utf-8")
    bad = mutate(text)  # type: ignore[operator]
    assert bad != text
    path = tmp_path / "toolchain.lock"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(LockError) as info:
        load_lock(path)
    diag = info.value.diagnostics()
    assert f"field '{field}'" in diag
    assert re.search(rf"{re.escape(str(path))}:\d+", diag)


def test_missing_field_points_at_its_package_block(tmp_path: Path) -> None:
    text = _drop_key(LOCK.read_text(encoding="utf-8"), "sha256", 2)
    path = tmp_path / "toolchain.lock"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LockError) as info:
        load_lock(path)
    assert info.value.where == f"{path}:{_line_of_package(text, 2)}"


def test_invalid_toml_is_a_lock_error(tmp_path: Path) -> None:
    path = tmp_path / "toolchain.lock"
    path.write_text("schema = \n", encoding="utf-8")
    with pytest.raises(LockError, match="not valid TOML"):
        load_lock(path)
