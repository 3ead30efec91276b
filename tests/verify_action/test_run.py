"""The verify Action's step: inputs become exactly the verifier's arguments; the JSON result
becomes the outputs; a real run installs the slim verifier and judges a real bundle."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

from tests.clones import bundle_and_dev_keys

REPO = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    # verify-action/ is an Action folder, not a package: load its script by path.
    spec = importlib.util.spec_from_file_location(
        "verify_action_run", REPO / "verify-action/run.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUN = _load()
BASE = {"INPUT_BUNDLE": "b", "INPUT_TRUSTED_KEYS": "k.json"}
CASES = [
    ("minimal", {}, []),
    ("zero-rebuilds-ignores-files", {"INPUT_REQUIRE_REBUILDS": "0", "INPUT_REBUILDERS": "r"}, []),
    (
        "rebuilds",
        {
            "INPUT_REQUIRE_REBUILDS": "2",
            "INPUT_REBUILDERS": "r.json",
            "INPUT_REBUILD_ATTESTATIONS": "a1\n\n a2 \n",
        },
        [
            *("--rebuilders", "r.json", "--require-rebuilds", "2"),
            *("--rebuild-attestation", "a1", "--rebuild-attestation", "a2"),
        ],
    ),
    (
        "engines",
        {"INPUT_REQUIRE_ENGINES": "chromium,webkit"},
        ["--require-engines", "chromium,webkit"],
    ),
    ("floor", {"INPUT_NOT_BEFORE_VERSION": "1.2.0"}, ["--not-before-version", "1.2.0"]),
    ("dev-key", {"INPUT_ALLOW_DEV_KEY": "true"}, ["--allow-dev-key"]),
    ("dev-key-false", {"INPUT_ALLOW_DEV_KEY": "false"}, []),
]


@pytest.mark.parametrize(("env", "extra"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_inputs_map_to_verifier_arguments(env: dict[str, str], extra: list[str]) -> None:
    args = RUN.verifier_args({**BASE, **env})
    assert args[:5] == ["bundle", "b", "--trusted-keys", "k.json", "--json"]
    assert args[5:] == extra


BAD = [
    ("no-bundle", {"INPUT_TRUSTED_KEYS": "k"}),
    ("rebuilds-not-a-number", {**BASE, "INPUT_REQUIRE_REBUILDS": "two"}),
    ("rebuilds-without-rebuilders", {**BASE, "INPUT_REQUIRE_REBUILDS": "1"}),
    ("dev-key-yes", {**BASE, "INPUT_ALLOW_DEV_KEY": "yes"}),
]


@pytest.mark.parametrize("env", [c[1] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_inputs_are_usage_errors(env: dict[str, str]) -> None:
    with pytest.raises(RUN.UsageError):
        RUN.verifier_args(env)
    assert RUN.main(env) == 2


def test_outputs_from_the_json_result(tmp_path: Path) -> None:
    ok = RUN.outputs('{"ok": true, "build_id": "ab12"}', tmp_path / "r.json")
    assert ok == {"verdict": "accepted", "build-id": "ab12", "result": str(tmp_path / "r.json")}
    assert RUN.outputs('{"ok": false, "build_id": null}', tmp_path)["verdict"] == "refused"
    assert RUN.outputs("not json", tmp_path)["verdict"] == "refused"


@pytest.mark.integration
def test_the_action_step_accepts_a_real_bundle_and_refuses_a_wrong_key(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    bundle, keys = bundle_and_dev_keys(request)
    trusted = next(keys.glob("*.trusted-keys.json"))
    output = tmp_path / "github_output"
    env = {
        **os.environ,
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        "INPUT_BUNDLE": str(bundle),
        "INPUT_TRUSTED_KEYS": str(trusted),
        "INPUT_ALLOW_DEV_KEY": "true",
    }
    assert RUN.main(env) == 0
    found = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert found["verdict"] == "accepted" and len(found["build-id"]) == 64
    assert Path(found["result"]).is_file()
    output.unlink()
    assert RUN.main({**env, "INPUT_ALLOW_DEV_KEY": "false"}) == 1
    assert "verdict=refused" in output.read_text()
