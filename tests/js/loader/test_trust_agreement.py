"""verify/ and the JS loader judge who signed the manifest alike (issue 23): every row of
trust_table.py goes through verify/'s trusted-keys logic (`trust_root_of` + `check_envelope`)
and through loader.js's step 1 (`verifySignedManifest`, in node, the case's files handed over by
its `fetch` option), and both must give the row's verdict: the same acceptance with the same
counted keys in the same order, or the same refusal (`LOADER_CODE` pairs the ids), with the
row's words in both messages ("2 of 3 required signatures on the manifest").

Real material: alice's key, the manifest and its signature are the release harness's released
bundle (tests/harness/release.py); bob, carol, dora and eve are `keygen` keys; the co-signed
envelope is that bundle after `tinyrustlm-release sign --key bob`.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from pipeline.cli import main as release_main
from pipeline.documents.keys import load_private_key
from pipeline.documents.sign import sign_envelope
from pipeline.release.cosign import CoSignTrust, cosign_bundle
from tests.harness.release import Harness, fake_report
from tests.js.loader.trust_table import (
    ACCEPTED,
    CASES,
    COSIGNED,
    LOADER_CODE,
    LOADER_FURTHER,
    ROLES,
    TrustCase,
)
from verify.bundle.dsse import Envelope, parse_sigstore_bundle, sigstore_bundle_json
from verify.bundle.layout import MANIFEST, MANIFEST_SIGNATURE
from verify.bundle.trusted_keys import check_envelope, load_trust_root, trust_root_of
from verify.canonical import canonical_json
from verify.errors import VerifyError
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE
from verify.formats.trusted_keys import TRUSTED_KEYS_SCHEMA_V2

REPO_ROOT = Path(__file__).resolve().parents[3]
LOADER = REPO_ROOT / "crates/wasm/js/loader.js"
NODE_TIMEOUT_SECONDS = 120
BASE_AFTER_COMMIT = 3600


@dataclass(frozen=True)
class Key:
    private_pem: Path
    keyid: str
    entry: dict[str, Any]  # its entry in its own trusted-keys file


@dataclass(frozen=True)
class Material:
    keys: dict[str, Key]
    manifests: dict[str, bytes]  # key_class -> manifest.json
    cosigned: bytes  # manifest.sigstore.json after `sign --key bob`
    base: int  # epoch seconds


@dataclass(frozen=True)
class Inputs:
    trusted_keys: bytes
    signature: bytes
    manifest: bytes
    now: int
    allow_dev_key: bool


@dataclass(frozen=True)
class Verdict:
    outcome: str  # ACCEPTED or the refusal's id / code
    message: str
    keyids: tuple[str, ...]  # accepted: the counted keys, in envelope order


@pytest.fixture(scope="module")
def material(pristine: tuple[Harness, Path], tmp_path_factory: pytest.TempPathFactory) -> Material:
    harness, bundle = pristine
    tmp = tmp_path_factory.mktemp("trust")
    files = {"alice": (harness.key.private_pem, harness.key.trusted_keys)}
    for name, role in ROLES.items():
        if name != "alice":
            argv = ["keygen", "--out", str(tmp / "keys"), "--name", name, "--role", role]
            assert release_main(argv) == 0
            files[name] = (tmp / f"keys/{name}.key.pem", tmp / f"keys/{name}.trusted-keys.json")
    keys = {}
    for name, (private, trusted) in files.items():
        entry = json.loads(trusted.read_text())["keys"][0]
        assert entry["role"] == ROLES[name]
        keys[name] = Key(private, entry["keyid"], entry)
    copy = tmp / "dist" / bundle.name
    shutil.copytree(bundle, copy)
    # as `sign` does it, verified first (the harness's fake native binary: its fake report)
    trust = CoSignTrust(load_trust_root(files["alice"][1]), True, derive=fake_report)
    cosign_bundle(copy, keys["bob"].private_pem, trust=trust)
    manifest = (bundle / MANIFEST).read_bytes()
    development = json.loads(manifest)
    development["key_class"] = "development"
    return Material(
        keys=keys,
        manifests={"release": manifest, "development": canonical_json(development)},
        cosigned=(copy / MANIFEST_SIGNATURE).read_bytes(),
        base=harness.commit_time + BASE_AFTER_COMMIT,
    )


def _stamp(base: int, spec: str) -> str:
    """ "+100" -> base+100 as an RFC 3339 UTC stamp; "+100.5" with a fraction; "+100 +01:00"
    the same instant in that zone; "+100 naive" without a zone."""
    offset, _, zone = spec.partition(" ")
    seconds, _, fraction = offset.lstrip("+").partition(".")
    instant = datetime.fromtimestamp(base + int(seconds), UTC)
    if zone and zone != "naive":
        sign = -1 if zone.startswith("-") else 1
        hours, minutes = zone[1:].split(":")
        delta = sign * timedelta(hours=int(hours), minutes=int(minutes))
        instant = instant.astimezone(timezone(delta))
    text = instant.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "")
    if zone == "naive":
        return text
    return text + (zone or "Z")


def _trusted_keys(case: TrustCase, m: Material) -> bytes:
    entries = []
    for name in case.keys:
        entry = dict(m.keys[name].entry)
        not_before, not_after = case.windows.get(name, (None, None))
        if not_before is not None:
            entry["not_before"] = _stamp(m.base, not_before)
        if not_after is not None:
            entry["not_after"] = _stamp(m.base, not_after)
        entries.append(entry)
    doc: dict[str, Any]
    if case.threshold is None:
        doc = {"schema": "tinyrustlm.trusted-keys.v1", "keys": entries}
    else:
        every = [m.keys[n].keyid for n in case.keys]
        allowed = [m.keys[n].keyid for n in case.allowed] if case.allowed else every
        doc = {
            "schema": TRUSTED_KEYS_SCHEMA_V2,
            "keys": entries,
            "policy": {
                "manifest": {"keyids": allowed, "threshold": case.threshold},
                "provenance": {"keyids": every, "threshold": case.threshold},
            },
            "revoked": [{"keyid": m.keys[n].keyid, "reason": "lost"} for n in case.revoked],
        }
    return json.dumps(edited(doc, case.edit), indent=1).encode()


def edited(doc: dict[str, Any], edits: dict[str, Any]) -> dict[str, Any]:
    """`doc` with each dotted path ("a.0.b") set to its value (None: removed; a callable:
    applied to the old value)."""
    for path, value in edits.items():
        *parents, last = path.split(".")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is None:
            del target[last]
        else:
            target[last] = value(target[last]) if callable(value) else value
    return doc


def _signature(case: TrustCase, m: Material) -> bytes:
    data = _signed(case, m)
    return json.dumps(edited(json.loads(data), case.envelope)).encode() if case.envelope else data


def _signed(case: TrustCase, m: Material) -> bytes:
    if case.signers == COSIGNED:
        return m.cosigned
    payload = m.manifests[case.manifest]
    signatures = []
    for signer in case.signers:
        name = signer.rstrip("~")
        key = load_private_key(m.keys[name].private_pem)
        (signature,) = sign_envelope(key, MANIFEST_PAYLOAD_TYPE, payload).signatures
        if signer.endswith("~"):  # a byte flipped: a signature that does not verify
            flipped = bytes([signature.sig[0] ^ 0x01]) + signature.sig[1:]
            signature = type(signature)(signature.keyid, flipped)
        signatures.append(signature)
    envelope = Envelope(MANIFEST_PAYLOAD_TYPE, payload, tuple(signatures))
    hint = m.keys[case.hint].keyid if case.hint else signatures[0].keyid
    return sigstore_bundle_json(envelope, hint=hint)


def inputs_of(case: TrustCase, m: Material) -> Inputs:
    return Inputs(
        trusted_keys=_trusted_keys(case, m),
        signature=_signature(case, m),
        manifest=m.manifests[case.manifest],
        now=m.base + case.at,
        allow_dev_key=case.allow_dev_key,
    )


def verifier_verdict(given: Inputs) -> Verdict:
    """What verify/ says: the trust root read, the manifest envelope counted (step 2)."""
    try:
        root = trust_root_of(given.trusted_keys, "trusted-keys")
        counted = check_envelope(
            given.signature, MANIFEST_SIGNATURE, "manifest", root, given.allow_dev_key, given.now
        )
    except VerifyError as exc:
        return Verdict(exc.error_id, exc.message, ())
    return Verdict(ACCEPTED, "", tuple(k.keyid for k in counted.signers))


@pytest.fixture(scope="module")
def loader_verdicts(
    material: Material, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Verdict]:
    """What loader.js says, every row in one node run."""
    from pipeline.toolchain import nodejs

    rows = []
    for case in [*CASES, *(c for c, _ in LOADER_FURTHER)]:
        given = inputs_of(case, material)
        rows.append({
            "name": case.name,
            "trustedKeys": json.loads(given.trusted_keys),
            "manifest": base64.b64encode(given.manifest).decode(),
            "signature": base64.b64encode(given.signature).decode(),
            "now": given.now,
            "allowDevKey": given.allow_dev_key,
        })  # fmt: skip
    spec = tmp_path_factory.mktemp("trust-node") / "cases.json"
    spec.write_text(json.dumps({"loader": LOADER.as_uri(), "cases": rows}))
    done = subprocess.run(
        [str(nodejs.executable()), str(Path(__file__).with_name("trust.mjs")), str(spec)],
        capture_output=True, text=True, timeout=NODE_TIMEOUT_SECONDS, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return {
        r["name"]: Verdict(r["code"] or ACCEPTED, r["message"], tuple(r["keyids"] or ()))
        for r in json.loads(done.stdout)
    }


def _check(case: TrustCase, got: Verdict, expected: str, m: Material) -> None:
    assert (got.outcome, got.message) == (expected, got.message), got.message
    if expected == ACCEPTED:
        assert sorted(got.keyids) == sorted(m.keys[n].keyid for n in case.counted)
    else:
        assert case.message in got.message


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_verifier_gives_the_tables_verdict(case: TrustCase, material: Material) -> None:
    _check(case, verifier_verdict(inputs_of(case, material)), case.expect, material)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_loader_gives_the_same_verdict(
    case: TrustCase, material: Material, loader_verdicts: dict[str, Verdict]
) -> None:
    got = loader_verdicts[case.name]
    _check(case, got, LOADER_CODE[case.expect], material)
    if case.expect == ACCEPTED:  # the same keys counted, in the same (envelope) order
        assert got.keyids == verifier_verdict(inputs_of(case, material)).keyids


def test_the_table_has_every_verdict_and_the_cosigned_envelope_is_real(
    material: Material,
) -> None:
    assert {c.expect for c in CASES} == LOADER_CODE.keys()
    names = [c.name for c in CASES] + [c.name for c, _ in LOADER_FURTHER]
    assert len(set(names)) == len(names)
    envelope = parse_sigstore_bundle(material.cosigned, MANIFEST_SIGNATURE).envelope
    assert envelope.payload == material.manifests["release"]
    keyids = {material.keys[n].keyid for n in ("alice", "bob")}
    assert {s.keyid for s in envelope.signatures} == keyids


@pytest.mark.parametrize(("case", "code"), LOADER_FURTHER, ids=[c.name for c, _ in LOADER_FURTHER])
def test_the_loader_also_checks_what_later_verifier_steps_do(
    case: TrustCase, code: str, material: Material, loader_verdicts: dict[str, Verdict]
) -> None:
    _check(case, verifier_verdict(inputs_of(case, material)), case.expect, material)
    got = loader_verdicts[case.name]
    assert got.outcome == code and case.message in got.message, got.message
