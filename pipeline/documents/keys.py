"""Release signing keys: `tinyrustlm-release keygen` and choosing the key a release signs with.

Order of precedence: `--key PATH`, then $TINYRUSTLM_RELEASE_KEY, then a development key made
once in the git-ignored `.dev-keys/` (so the README's main command works on a fresh machine).
A development key's bundle says `key_class: development`; verifiers refuse it unless told
`--allow-dev-key`. Private keys are unencrypted PKCS#8 PEM with mode 0600.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
)

from pipeline import paths
from pipeline.errors import EXIT_OK, PipelineError
from pipeline.io.atomic import write_atomic
from verify.bundle.dsse import keyid_of
from verify.bundle.trusted_keys import trusted_key_entry, trusted_keys_json
from verify.formats.manifest import KeyClass
from verify.inputs import InputError, read_regular_file
from verify.shell.result import Outcome

KEY_ENV = "TINYRUSTLM_RELEASE_KEY"
DEV_KEY_DIR = str(paths.DEV_KEYS_DIR)
DEV_KEY_NAME = "development"
# How long a new key is trusted for (the trusted-keys file's not_after).
KEY_VALIDITY = {"release": timedelta(days=2 * 365), "development": timedelta(days=10 * 365)}
# A key name is a file-name stem: no path separators, no leading dot (so never `..`).
KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class SigningKeyError(PipelineError):
    """A signing key that cannot be read or used; names the file."""

    error_id = "key.unusable"
    default_hint = (
        "create a key with `tinyrustlm-release keygen` and pass its NAME.key.pem "
        "(unencrypted Ed25519 PEM)"
    )


@dataclass(frozen=True)
class KeyFiles:
    private_pem: Path
    public_pem: Path
    trusted_keys: Path
    keyid: str


@dataclass(frozen=True)
class SigningKey:
    private_key: Ed25519PrivateKey
    keyid: str
    key_class: KeyClass
    source: str  # where it came from, for the summary


def generate_key_files(
    folder: Path, name: str, role: KeyClass, now: datetime | None = None
) -> KeyFiles:
    """Write NAME.key.pem (0600), NAME.pub.pem and NAME.trusted-keys.json into `folder`."""
    if KEY_NAME.match(name) is None:
        raise SigningKeyError(
            f"key name {name!r} is not a plain file-name stem (letters, digits, . _ -; no "
            "path separators, not starting with a dot)",
            where="--name",
            hint="the files always go into --out; pick a name like `release-2026`",
        )
    folder.mkdir(parents=True, exist_ok=True)
    private = folder / f"{name}.key.pem"
    if private.exists():
        raise SigningKeyError("refusing to overwrite an existing private key", where=str(private))
    key = Ed25519PrivateKey.generate()
    public_key = key.public_key()
    not_after = (now or datetime.now(UTC)).replace(microsecond=0) + KEY_VALIDITY[role]
    public = folder / f"{name}.pub.pem"
    trusted = folder / f"{name}.trusted-keys.json"
    # Public parts first: a private key never exists without its trust entry beside it.
    write_atomic(public, public_key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    write_atomic(trusted, trusted_keys_json([trusted_key_entry(public_key, role, not_after)]))
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    write_atomic(private, pem, mode=0o600)
    return KeyFiles(private, public, trusted, keyid_of(public_key))


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        data = read_regular_file(path, "signing-key")  # never a FIFO, never unbounded
    except InputError as exc:
        raise SigningKeyError(
            f"signing key: {exc.message} ({exc.error_id})", where=str(path)
        ) from exc
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(
            f"not an unencrypted PEM private key: {exc}",
            where=str(path),
            hint="create one with `tinyrustlm-release keygen`",
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError("the signing key must be Ed25519", where=str(path))
    return key


def dev_trusted_keys(repo_root: Path) -> Path:
    """Where the development key's trusted-keys file is (verifiers of a dev release need it)."""
    return repo_root / DEV_KEY_DIR / f"{DEV_KEY_NAME}.trusted-keys.json"


def dev_key_files(repo_root: Path) -> KeyFiles:
    """The development key, created on first use (one per checkout, never committed)."""
    folder = repo_root / DEV_KEY_DIR
    private = folder / f"{DEV_KEY_NAME}.key.pem"
    if private.exists():
        key = load_private_key(private)
        return KeyFiles(
            private,
            folder / f"{DEV_KEY_NAME}.pub.pem",
            dev_trusted_keys(repo_root),
            keyid_of(key.public_key()),
        )
    return generate_key_files(folder, DEV_KEY_NAME, "development")


def resolve_signing_key(
    repo_root: Path, key_path: Path | None, env: dict[str, str], key_class: KeyClass = "release"
) -> SigningKey:
    """--key, then $TINYRUSTLM_RELEASE_KEY, then the development key."""
    if key_path is None and env.get(KEY_ENV):
        key_path = Path(env[KEY_ENV])
    if key_path is not None:
        key = load_private_key(key_path)
        return SigningKey(key, keyid_of(key.public_key()), key_class, str(key_path))
    files = dev_key_files(repo_root)
    key = load_private_key(files.private_pem)
    return SigningKey(key, files.keyid, "development", str(files.private_pem))


def check_signing_key(
    repo_root: Path, key_path: Path | None, env: dict[str, str], key_class: KeyClass = "release"
) -> str:
    """Load the key a release will sign with, so a bad `--key` stops step 1, not step 5."""
    key = resolve_signing_key(repo_root, key_path, env, key_class)
    return f"key {key.keyid[:16]}… ({key.key_class})"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="folder for the key files (keep it outside the repository)",
    )
    parser.add_argument("--name", default="release", help="file name stem (default: release)")
    parser.add_argument(
        "--role",
        choices=["release", "development"],
        default="release",
        help="role written into the trusted-keys file",
    )


def run(args: argparse.Namespace) -> Outcome:
    files = generate_key_files(args.out, args.name, args.role)
    print(f"keyid        {files.keyid}")
    print(f"private key  {files.private_pem}  (mode 0600: keep it secret, never commit it)")
    print(f"public key   {files.public_pem}")
    print(f"trusted keys {files.trusted_keys}  (give this to verifiers)")
    print(f"sign with    tinyrustlm-release release --key {files.private_pem}")
    return Outcome(
        EXIT_OK,
        {
            "keyid": files.keyid,
            "private_key": str(files.private_pem),
            "public_key": str(files.public_pem),
            "trusted_keys": str(files.trusted_keys),
        },
    )
