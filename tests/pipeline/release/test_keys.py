"""Keys: keygen files and modes, keyid definition, key precedence, dev key made once."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_public_key,
)

from pipeline.cli import main as release_main
from pipeline.documents.keys import (
    KEY_ENV,
    SigningKeyError,
    generate_key_files,
    load_private_key,
    resolve_signing_key,
)
from verify.bundle.trusted_keys import load_trusted_keys


def test_keygen_command_writes_private_0600_public_and_trust_entry(tmp_path: Path) -> None:
    code = release_main(["keygen", "--out", str(tmp_path), "--name", "rel"])
    assert code == 0
    private = tmp_path / "rel.key.pem"
    assert private.stat().st_mode & 0o777 == 0o600
    public = load_pem_public_key((tmp_path / "rel.pub.pem").read_bytes())
    spki = public.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    keyid = hashlib.sha256(spki).hexdigest()
    trusted = load_trusted_keys(tmp_path / "rel.trusted-keys.json")
    assert list(trusted) == [keyid]
    assert trusted[keyid].role == "release"
    doc = json.loads((tmp_path / "rel.trusted-keys.json").read_text())
    assert doc["schema"] == "tinyrustlm.trusted-keys.v1"


def test_keygen_refuses_to_overwrite(tmp_path: Path) -> None:
    generate_key_files(tmp_path, "k", "release")
    before = (tmp_path / "k.key.pem").read_bytes()
    with pytest.raises(SigningKeyError):
        generate_key_files(tmp_path, "k", "release")
    assert (tmp_path / "k.key.pem").read_bytes() == before


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"not pem", "PEM"), (None, "cannot read")],
    ids=["garbage", "missing"],
)
def test_bad_key_file_is_a_typed_error(tmp_path: Path, content: bytes | None, needle: str) -> None:
    path = tmp_path / "key.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SigningKeyError) as info:
        load_private_key(path)
    assert needle in info.value.message and info.value.where == str(path)


def test_precedence_flag_then_env_then_dev_key(tmp_path: Path) -> None:
    flag = generate_key_files(tmp_path / "a", "flag", "release")
    env = generate_key_files(tmp_path / "b", "env", "release")
    repo = tmp_path / "repo"
    repo.mkdir()
    chosen = resolve_signing_key(repo, flag.private_pem, {KEY_ENV: str(env.private_pem)})
    assert (chosen.keyid, chosen.key_class) == (flag.keyid, "release")
    chosen = resolve_signing_key(repo, None, {KEY_ENV: str(env.private_pem)})
    assert chosen.keyid == env.keyid
    dev = resolve_signing_key(repo, None, {})
    assert dev.key_class == "development"
    assert (repo / ".dev-keys/development.key.pem").stat().st_mode & 0o777 == 0o600
    trusted = load_trusted_keys(repo / ".dev-keys/development.trusted-keys.json")
    assert trusted[dev.keyid].role == "development"
    assert resolve_signing_key(repo, None, {}).keyid == dev.keyid  # made once, then reused
