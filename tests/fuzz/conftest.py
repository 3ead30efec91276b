"""The scalar lane for the model campaign's sample, built as tests/crates/runtime builds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crates.runtime.conftest import build_scalar_wasm


@pytest.fixture(scope="session")
def scalar_wasm() -> Path:
    return build_scalar_wasm()
