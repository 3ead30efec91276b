"""Policy errors word for word (verify/policy `_error_text`, `read_policy_file`): a policy
author reads these, so each kind of problem keeps its exact wording, field path and file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.verify.test_policy import BAD_WASM, _edit
from verify.policy import DEFAULT_POLICY_DIR, PolicyError, load_native_policies, load_wasm_policies

EXACT = {
    "no-lanes": "field 'wasm.lanes': no lanes: an empty policy allows nothing",
    "lane-without-checks": "field 'wasm': lane 'scalar-wasm32' has no checks",
    "unknown-field": "unknown field 'wasm.lanes.scalar-wasm32.extra'",
    "missing-field": "missing field 'wasm.lanes.scalar-wasm32.memory'",
    "required-not-allowed": (
        "field 'wasm.lanes.scalar-wasm32': required proposals are not all allowed"
    ),
    "wrong-schema": "field 'wasm.schema': expected 'tinyrustlm.lane-policy.v1'",
    "wrong-type": "field 'wasm.common.forbid_debug_sections': expected a valid boolean",
    "bad-memory-source": (
        "field 'wasm.lanes.scalar-wasm32.memory.source': expected 'export' or 'import'"
    ),
}


@pytest.mark.parametrize("case", list(EXACT))
def test_validation_errors_word_for_word(tmp_path: Path, case: str) -> None:
    edit = next(e for name, e, _ in BAD_WASM if name == case)
    path = tmp_path / "wasm.json"
    path.write_text(json.dumps(_edit(edit)))
    with pytest.raises(PolicyError) as caught:
        load_wasm_policies(tmp_path)
    assert (caught.value.message, caught.value.where) == (EXACT[case], str(path))


def test_unknown_proposal_names_the_known_ones(tmp_path: Path) -> None:
    edit = next(e for name, e, _ in BAD_WASM if name == "unknown-proposal")
    (tmp_path / "wasm.json").write_text(json.dumps(_edit(edit)))
    with pytest.raises(PolicyError) as caught:
        load_wasm_policies(tmp_path)
    assert caught.value.message.startswith(
        "field 'wasm.lanes.scalar-wasm32.allowed_proposals': proposal list: unknown proposal "
        "'fp16' (known: ['bulk-memory', "
    )


def test_a_document_that_is_not_an_object_has_no_field_path(tmp_path: Path) -> None:
    (tmp_path / "wasm.json").write_text("[]")
    with pytest.raises(PolicyError) as caught:
        load_wasm_policies(tmp_path)
    assert caught.value.message == (
        "Input should be a valid dictionary or object to extract fields from"
    )


def test_the_other_lane_kinds_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "wasm.json").write_text((DEFAULT_POLICY_DIR / "native.json").read_text())
    with pytest.raises(PolicyError) as caught:
        load_wasm_policies(tmp_path)
    assert caught.value.message == "format is 'native': this is not wasm.json"
    assert caught.value.where == str(tmp_path / "wasm.json")
    (tmp_path / "native.json").write_text((DEFAULT_POLICY_DIR / "wasm.json").read_text())
    with pytest.raises(PolicyError) as caught:
        load_native_policies(tmp_path)
    assert caught.value.message == "format is 'wasm': this is not native.json"


def test_unreadable_and_malformed_files_say_which(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        load_wasm_policies(tmp_path)
    assert caught.value.message == (
        "cannot read policy: cannot read policy file: No such file or directory (input.unreadable)"
    )
    assert caught.value.where == str(tmp_path / "wasm.json")
    (tmp_path / "wasm.json").write_text("{")
    with pytest.raises(PolicyError) as caught:
        load_wasm_policies(tmp_path)
    assert caught.value.message == (
        "policy is not valid JSON: not JSON: Expecting property name enclosed in double quotes "
        "(json.malformed)"
    )
    assert caught.value.where == str(tmp_path / "wasm.json")


def test_a_repeated_entry_is_named(tmp_path: Path) -> None:
    def repeat(doc: dict[str, Any]) -> None:
        allowed = doc["lanes"]["scalar-wasm32"]["allowed_proposals"]
        allowed.append(allowed[0])

    (tmp_path / "wasm.json").write_text(json.dumps(_edit(repeat)))
    with pytest.raises(PolicyError) as caught:
        load_wasm_policies(tmp_path)
    assert caught.value.message == (
        "field 'wasm.lanes.scalar-wasm32.allowed_proposals': repeated entries"
    )
