"""Fixtures of the conformance tests: a real release, whom its loader trusts, the cases model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pipeline.conformance.matrix import Trust
from pipeline.modelpack import PRESETS, pack
from tests.clones import bundle_and_dev_keys

REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def conformance_bundle(request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """(bundle, the trusted-keys file of the development key that signed it)."""
    bundle, keys = bundle_and_dev_keys(request)
    return bundle, keys / "development.trusted-keys.json"


@pytest.fixture(scope="session")
def dev_trust(conformance_bundle: tuple[Path, Path]) -> Trust:
    return Trust(json.loads(conformance_bundle[1].read_text()), allow_dev_key=True)


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data = pack(PRESETS["small"], 1)
    path = tmp_path_factory.mktemp("model") / "small.trlm"
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()
