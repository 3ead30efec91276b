"""Fixtures of the conformance tests: a real release, whom its loader trusts, the cases models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.conformance.cli import TIER_MODELS, model_file
from pipeline.conformance.matrix import ModelFile, Trust
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
def tier_models(tmp_path_factory: pytest.TempPathFactory) -> list[ModelFile]:
    """The cases' model of each kernel tier, as the conformance command packs them."""
    folder = tmp_path_factory.mktemp("model")
    return [ModelFile(t, p, *model_file(p, folder)) for t, p in TIER_MODELS.items()]


@pytest.fixture(scope="session")
def small_model(tier_models: list[ModelFile]) -> ModelFile:
    """The f32 tier's model (`small`)."""
    return next(m for m in tier_models if m.tier == "f32")
