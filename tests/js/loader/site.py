"""A test site for the loader: a real release bundle plus tampered variants of it, on disk.

`b/` is the bundle as released. Each variant `v/<name>/` is the same bundle (hard links) with
a few files replaced: a flipped manifest byte, a signature by another key, a manifest re-signed
with the release's own development key after an edit (expired, unsupported ABI, a lane
disabled, a module whose embedded self-test model was broken), swapped signature files, a
changed probe. `v/cosigned/` is the bundle co-signed by a second development key with
`tinyrustlm-release sign` (threshold co-signing, issue 23), trusted by the v2 policies
keys/cosigned-2of2.json (met) and keys/cosigned-3of3.json (one short). The same folder is
served over HTTP (pipeline.serve.Site) to node and Chromium.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pipeline.documents.keys import generate_key_files, load_private_key
from pipeline.documents.sign import sign_to_sigstore_bundle
from pipeline.documents.trust_policy import trust_policy
from pipeline.release.cosign import CoSignTrust, cosign_bundle
from verify.bundle.trusted_keys import load_trust_root
from verify.canonical import canonical_json
from verify.formats.manifest import MANIFEST_PAYLOAD_TYPE

HERE = Path(__file__).parent
RELAXED_THREADS_LANE = "relaxed-simd128-threads-wasm32"
THREADS_LANE = "simd128-threads-wasm32"
RELAXED_LANE = "relaxed-simd128-wasm32"
SIMD_LANE = "simd128-wasm32"
SCALAR_LANE = "scalar-wasm32"
# the loader's choice order where every probe validates and the page is isolated (choice.js)
LANE_ORDER = (RELAXED_THREADS_LANE, THREADS_LANE, RELAXED_LANE, SIMD_LANE, SCALAR_LANE)
RELAXED_LANES = (RELAXED_THREADS_LANE, RELAXED_LANE)
RELAXED_OFF = {"relaxedSimd": "off"}


def deny_above(lane: str) -> dict[str, list[str]]:
    """The options that make `lane` the first candidate: every better lane denied."""
    return {"denyLanes": list(LANE_ORDER[: LANE_ORDER.index(lane)])}


# The embedded self-test model (crates/core/src/selftest/tiny.trlm) starts with its magic and
# format version 1; version 3 (no tier) makes `e2e.tiny_greedy` fail with UnsupportedFeature.
TINY_MODEL_HEAD = b"TRLMODEL\x01\x00\x00\x00"


@dataclass(frozen=True)
class Signer:
    key: Ed25519PrivateKey
    keyid: str
    trusted_keys: Path


def link_tree(source: Path, target: Path) -> None:
    """A copy of `source` made of hard links (variants replace files, never edit them)."""
    for path in sorted(source.rglob("*")):
        dest = target / path.relative_to(source)
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, dest)


def replace(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.unlink()
    path.write_bytes(data)


def manifest_of(root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((root / "manifest.json").read_bytes())
    return doc


def resign(root: Path, signer: Signer, manifest: dict[str, Any]) -> None:
    """Write `manifest` as manifest.json and its signature by `signer` (a consistent pair)."""
    payload = canonical_json(manifest)
    replace(root, "manifest.json", payload)
    bundle = sign_to_sigstore_bundle(signer.key, MANIFEST_PAYLOAD_TYPE, payload)
    replace(root, "manifest.sigstore.json", bundle)


def artifact(manifest: dict[str, Any], lane: str) -> dict[str, Any]:
    found: dict[str, Any] = next(a for a in manifest["artifacts"] if a["id"] == lane)
    return found


# ---- the variants: name -> edit(root, dev signer, other signer) ----------------------------


def tampered_manifest(root: Path, dev: Signer, other: Signer) -> None:
    data = bytearray((root / "manifest.json").read_bytes())
    at = data.index(b'"version":"') + len(b'"version":"')
    data[at] ^= 0x01
    replace(root, "manifest.json", bytes(data))


def tampered_signed_payload(root: Path, dev: Signer, other: Signer) -> None:
    doc = json.loads((root / "manifest.sigstore.json").read_bytes())
    payload = bytearray(base64.b64decode(doc["dsseEnvelope"]["payload"]))
    payload[len(payload) // 2] ^= 0x01
    doc["dsseEnvelope"]["payload"] = base64.b64encode(bytes(payload)).decode()
    replace(root, "manifest.sigstore.json", json.dumps(doc).encode())


def untrusted_key(root: Path, dev: Signer, other: Signer) -> None:
    resign(root, other, manifest_of(root))


def expired(root: Path, dev: Signer, other: Signer) -> None:
    manifest = manifest_of(root)
    manifest["expires_epoch"] = manifest["source_date_epoch"] + 1
    resign(root, dev, manifest)


def swapped_signatures(root: Path, dev: Signer, other: Signer) -> None:
    manifest_sig = (root / "manifest.sigstore.json").read_bytes()
    replace(root, "manifest.sigstore.json", (root / "provenance.sigstore.json").read_bytes())
    replace(root, "provenance.sigstore.json", manifest_sig)


def module_bytes_differ(root: Path, dev: Signer, other: Signer) -> None:
    for a in manifest_of(root)["artifacts"]:
        data = bytearray((root / a["url"]).read_bytes())
        data[-1] ^= 0x01
        replace(root, a["url"], bytes(data))


def unsupported_abi(root: Path, dev: Signer, other: Signer) -> None:
    manifest = manifest_of(root)
    manifest["abi_version"] = 2
    resign(root, dev, manifest)


def threads_disabled(root: Path, dev: Signer, other: Signer) -> None:
    manifest = manifest_of(root)
    manifest["disabled_lanes"] = [THREADS_LANE]
    resign(root, dev, manifest)


def self_test_fails(lane: str) -> Callable[[Path, Signer, Signer], None]:
    """`lane`'s module with its embedded self-test model broken, correctly signed."""

    def edit(root: Path, dev: Signer, other: Signer) -> None:
        manifest = manifest_of(root)
        entry = artifact(manifest, lane)
        data = bytearray((root / entry["url"]).read_bytes())
        assert data.count(TINY_MODEL_HEAD) == 1, "the embedded tiny model is not found once"
        data[data.index(TINY_MODEL_HEAD) + 8] = 3
        replace(root, entry["url"], bytes(data))
        entry["sha256"] = hashlib.sha256(data).hexdigest()
        entry["size"] = len(data)
        resign(root, dev, manifest)

    return edit


def probe_tampered(root: Path, dev: Signer, other: Signer) -> None:
    text = (root / "js/probes.js").read_text(encoding="utf-8")
    marker = "bytes: Object.freeze([0, 97, 115, 109, 1, 0, 0, 0, "
    at = text.index(marker) + len(marker)
    replace(root, "js/probes.js", (text[:at] + "2" + text[at + 1 :]).encode())


NEWER_VERSION = "9.0.0"


def newer_version(root: Path, dev: Signer, other: Signer) -> None:
    """The same release, signed as a newer version (a page that accepted it refuses b/ after)."""
    manifest = manifest_of(root)
    manifest["version"] = NEWER_VERSION
    resign(root, dev, manifest)


VARIANTS: dict[str, Callable[[Path, Signer, Signer], None]] = {
    "newer-version": newer_version,
    "tampered-manifest": tampered_manifest,
    "tampered-signed-payload": tampered_signed_payload,
    "untrusted-key": untrusted_key,
    "expired": expired,
    "swapped-signatures": swapped_signatures,
    "module-bytes-differ": module_bytes_differ,
    "unsupported-abi": unsupported_abi,
    "threads-disabled": threads_disabled,
    "threads-self-test-fails": self_test_fails(THREADS_LANE),
    "simd-self-test-fails": self_test_fails(SIMD_LANE),
    "relaxed-threads-self-test-fails": self_test_fails(RELAXED_THREADS_LANE),
    "relaxed-self-test-fails": self_test_fails(RELAXED_LANE),
    "probe-tampered": probe_tampered,
}


def cosigned(root: Path, bundle: Path, dev_trusted: Path, other_trusted: Path) -> None:
    """v/cosigned/: the bundle co-signed (manifest and provenance) by a second development
    key, as `tinyrustlm-release sign` does it; and the v2 policies that trust it."""
    keys = root.parent / f"{root.name}-keys"
    second = generate_key_files(keys, "codev", "development")
    copy = root.parent / f"{root.name}-dist" / bundle.name
    shutil.copytree(bundle, copy)
    trust = CoSignTrust(load_trust_root(dev_trusted), allow_dev_key=True)
    cosign_bundle(copy, second.private_pem, trust=trust)
    link_tree(copy, root / "v" / "cosigned")
    (root / "keys").mkdir(exist_ok=True)
    both = [dev_trusted, second.trusted_keys]
    (root / "keys/cosigned-2of2.json").write_bytes(trust_policy(both, 2, []))
    (root / "keys/cosigned-3of3.json").write_bytes(trust_policy([*both, other_trusted], 3, []))


def make_site(root: Path, bundle: Path, dev_key_pem: Path, model: bytes) -> Path:
    """The whole test site under `root`; returns it."""
    other_files = generate_key_files(root.parent / f"{root.name}-keys", "other", "release")
    key = load_private_key(dev_key_pem)
    dev_trusted = dev_key_pem.parent / "development.trusted-keys.json"
    dev = Signer(key, "", dev_trusted)
    other = Signer(
        load_private_key(other_files.private_pem), other_files.keyid, other_files.trusted_keys
    )
    link_tree(bundle, root / "b")
    for name, edit in VARIANTS.items():
        link_tree(bundle, root / "v" / name)
        edit(root / "v" / name, dev, other)
    (root / "keys").mkdir(exist_ok=True)
    shutil.copy(dev_trusted, root / "keys/dev.json")
    shutil.copy(other_files.trusted_keys, root / "keys/other.json")
    # the release's own key, but past its not_after / written beside another key's id
    keys = json.loads(dev_trusted.read_bytes())
    keys["keys"][0]["not_after"] = "2001-01-01T00:00:00Z"
    (root / "keys/dev-expired.json").write_text(json.dumps(keys))
    keys = json.loads(dev_trusted.read_bytes())
    keys["keys"][0]["keyid"] = other_files.keyid
    (root / "keys/dev-wrong-keyid.json").write_text(json.dumps(keys))
    cosigned(root, bundle, dev_trusted, other_files.trusted_keys)
    (root / "model.trlm").write_bytes(model)
    for name in ("runner.mjs", "drive.mjs"):
        shutil.copy(HERE / name, root / name)
    for page in (HERE / "page").iterdir():
        shutil.copy(page, root / page.name)
    # node: a worker entry that never answers (its lane must fall back within the bound)
    (root / "silent-worker.mjs").write_text("// never acknowledges anything\n")
    return root
