"""The loader's error codes are one list: loader.d.ts's `LoaderErrorCode` union. Every code the
loader's rooms throw is in it, and README's "Every refusal is a `LoaderError` ..." sentence
names exactly its refusal codes (the union's part above the lane-attempt codes)."""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
JS = REPO_ROOT / "crates/wasm/js"
ATTEMPTS_MARK = "// recorded in a receipt's attempts"


def union() -> tuple[list[str], list[str]]:
    """(refusal codes, lane-attempt codes) of `LoaderErrorCode`, in declaration order."""
    text = (JS / "loader.d.ts").read_text()
    body = text[text.index("export type LoaderErrorCode =") :].split(";", 1)[0]
    refusals, attempts = body.split(ATTEMPTS_MARK)
    return re.findall(r"\| '(\w+)'", refusals), re.findall(r"\| '(\w+)'", attempts)


def thrown() -> set[str]:
    codes = set()
    for path in JS.glob("*.js"):
        text = path.read_text()
        codes |= set(re.findall(r"new LoaderError\(\s*'(\w+)'", text))
        codes |= set(re.findall(r"new LaneFailure\([^,]+,\s*'(\w+)'", text))
    return codes


def readme_codes() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    start = text.index("Every refusal is a `LoaderError` with a stable `code`:")
    sentence = text[start : text.index("\n\n", start)]
    return re.findall(r"`(\w+)`", sentence.split(":", 1)[1])


def test_every_thrown_code_is_in_the_union() -> None:
    refusals, attempts = union()
    assert len(refusals) == len(set(refusals)) and not set(refusals) & set(attempts)
    assert thrown() - {*refusals, *attempts} == set()
    assert {"SignatureThreshold", "DuplicateSignature", "KeyRevoked"} <= thrown()


def test_the_readme_names_every_refusal_code() -> None:
    refusals, _ = union()
    named = readme_codes()
    assert sorted(named) == sorted(refusals), (
        f"missing from README: {sorted(set(refusals) - set(named))}; "
        f"not in loader.d.ts: {sorted(set(named) - set(refusals))}"
    )
