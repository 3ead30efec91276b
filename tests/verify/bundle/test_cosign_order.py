"""Co-signers in either order (issue 36, "tests that still let planted bugs through"): the
verdict does not depend on the order of an envelope's signatures, and the key-class rule holds
for every counted co-signer, not the first one only: a release whose manifest says
`key_class: "release"`, co-signed by a development key (counted with --allow-dev-key), is
refused whether the development signature comes first or second.

The envelopes are co-signed with the real `add_signature` and then put in the order under
test by hand (`sign` itself orders signatures by keyid); SHA256SUMS and the tarball are
derived again, so every step runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pipeline.documents.keys import KeyFiles, generate_key_files, load_private_key
from pipeline.documents.sign import add_signature
from pipeline.documents.trust_policy import trust_policy
from tests.harness.release import Harness, fake_report, repack, verify_json
from verify.bundle import verifier
from verify.bundle.layout import MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE


@pytest.fixture(autouse=True)
def _fake_inspection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "default_deriver", lambda: fake_report)


def _cosigned(
    pristine: tuple[Harness, Path], tmp_path: Path, cosigner: KeyFiles, cosigner_first: bool
) -> Path:
    """A copy of the release, co-signed by `cosigner`, its signature first or second."""
    original = pristine[1]
    bundle = tmp_path / "dist" / original.name
    shutil.copytree(original, bundle)
    key = load_private_key(cosigner.private_pem)
    for name in (MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE):
        doc = json.loads(add_signature(key, (bundle / name).read_bytes(), name))
        signatures = doc["dsseEnvelope"]["signatures"]
        signatures.sort(key=lambda s: (s["keyid"] == cosigner.keyid) != cosigner_first)
        assert [s["keyid"] for s in signatures].index(cosigner.keyid) == (
            0 if cosigner_first else 1
        )
        (bundle / name).write_text(json.dumps(doc))
    repack(bundle)  # SHA256SUMS and the tarball, as `sign` derives them
    return bundle


def _policy(tmp_path: Path, keys: list[KeyFiles], threshold: int) -> Path:
    path = tmp_path / f"policy-{threshold}.json"
    path.write_bytes(trust_policy([k.trusted_keys for k in keys], threshold, []))
    return path


def _verdict(result: dict[str, Any]) -> tuple[object, ...]:
    """What the verdict says, order-free: accepted, error id and step, signers, key class."""
    error = result.get("error") or {}
    return (
        result["ok"],
        error.get("id"),
        error.get("step"),
        sorted(result.get("keyids") or []),
        result.get("key_class"),
    )


ORDERS = {"co-signer first": True, "co-signer second": False}


@pytest.mark.parametrize("threshold", [1, 2], ids=["threshold 1", "threshold 2"])
@pytest.mark.parametrize("cosigner_first", ORDERS.values(), ids=ORDERS.keys())
def test_a_development_cosigner_breaks_the_key_class_rule_in_either_order(
    pristine: tuple[Harness, Path], tmp_path: Path, cosigner_first: bool, threshold: int
) -> None:
    harness = pristine[0]
    dev = generate_key_files(tmp_path / "keys", "dev", "development")
    bundle = _cosigned(pristine, tmp_path, dev, cosigner_first)
    trusted = _policy(tmp_path, [harness.key, dev], threshold)
    code, result, _ = verify_json(bundle, trusted, "--allow-dev-key")
    assert (code, result["error"]["id"], result["error"]["step"]) == (1, "manifest.key-class", 5)
    assert dev.keyid[:16] in result["error"]["message"]


def test_the_verdict_does_not_depend_on_the_order_of_signatures(
    pristine: tuple[Harness, Path], tmp_path: Path
) -> None:
    harness = pristine[0]
    bob = generate_key_files(tmp_path / "keys", "bob", "release")
    dev = generate_key_files(tmp_path / "keys", "dev", "development")
    # (co-signer, policy keys, threshold, extra flags, exit code) -> both orders agree
    cases: list[tuple[KeyFiles, list[KeyFiles], int, tuple[str, ...], int]] = [
        (bob, [harness.key, bob], 2, (), 0),  # accepted, 2 of 2
        (bob, [harness.key, bob], 1, (), 0),  # accepted, both count
        (bob, [harness.key], 1, (), 0),  # bob untrusted: ignored, 1 of 1
        (dev, [harness.key, dev], 1, (), 0),  # the dev signature not counted: 1 of 1
        (dev, [harness.key, dev], 2, (), 1),  # ... 1 of 2
        (dev, [harness.key, dev], 2, ("--allow-dev-key",), 1),  # key class
    ]
    for i, (cosigner, keys, threshold, flags, expected) in enumerate(cases):
        verdicts = []
        for first in (True, False):
            folder = tmp_path / f"case-{i}-{first}"
            bundle = _cosigned(pristine, folder, cosigner, first)
            trusted = _policy(folder, keys, threshold)
            code, result, _ = verify_json(bundle, trusted, *flags)
            verdicts.append((code, _verdict(result)))
        assert verdicts[0] == verdicts[1], (i, verdicts)
        assert verdicts[0][0] == expected, (i, verdicts)
