"""The scalar lane for the model campaign's sample, built as tests/crates/runtime builds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crates.runtime.conftest import TARGET, cargo_build


@pytest.fixture(scope="session")
def scalar_wasm() -> Path:
    cargo_build(
        ["-p", "tinyrustlm-wasm", "--target", "wasm32-unknown-unknown"], "-C target-cpu=mvp"
    )
    return TARGET / "wasm32-unknown-unknown" / "release" / "tinyrustlm_wasm.wasm"
