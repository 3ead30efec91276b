"""The TUF repository's Ed25519 keys: one folder per role, the root key apart from the rest.

    KEYS/root/<class>.<keyid>.key.pem       offline: read only by `repo init` / `repo rotate-root`
                                            (`--root-keys DIR` keeps it elsewhere, e.g. removable
                                            media)
    KEYS/targets/<class>.<keyid>.key.pem    read by `publish`
    KEYS/snapshot/<class>.<keyid>.key.pem   online: read by `publish` and `repo refresh-timestamp`
    KEYS/timestamp/<class>.<keyid>.key.pem

<class> is `development` or `release`, and the same label is written beside each public key in
root metadata (`x-tinyrustlm-key-class`), so a development repository says so to every client.
Which file signs is decided by the keyids the current root names, never by file order; a
retired key is moved to `retired/` beside it. Private keys: unencrypted PKCS#8 PEM, mode 0600.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from securesystemslib.signer import CryptoSigner, Key, SSlibKey

from pipeline.documents.keys import load_private_key
from pipeline.io.atomic import write_atomic
from pipeline.tuf.errors import KeyMissing
from verify.formats.manifest import KeyClass

ROOT_ROLE = "root"
ONLINE_ROLES = ("targets", "snapshot", "timestamp")
KEY_CLASS_FIELD = "x-tinyrustlm-key-class"
RETIRED_DIR = "retired"


@dataclass(frozen=True)
class KeyFolders:
    keys: Path
    root_override: Path | None = None

    def folder(self, role: str) -> Path:
        if role == ROOT_ROLE and self.root_override is not None:
            return self.root_override
        return self.keys / role


def key_class_of(key: Key) -> str:
    return str(key.unrecognized_fields.get(KEY_CLASS_FIELD, "unlabelled"))


def generate_signer(folder: Path, key_class: KeyClass) -> CryptoSigner:
    """A new Ed25519 key, its private half written (0600) into `folder` before it is used."""
    private = Ed25519PrivateKey.generate()
    public = SSlibKey.from_crypto(private.public_key(), scheme="ed25519")
    public.unrecognized_fields[KEY_CLASS_FIELD] = key_class
    signer = CryptoSigner(private, public)
    write_atomic(folder / f"{key_class}.{public.keyid}.key.pem", signer.private_bytes, mode=0o600)
    return signer


def key_file(folder: Path, keyid: str) -> Path | None:
    found = sorted(folder.glob(f"*.{keyid}.key.pem"))
    return found[0] if found else None


def load_signer(folders: KeyFolders, role: str, key: Key) -> CryptoSigner:
    """The signer for `key` (named by the current root for `role`), from its role's folder."""
    folder = folders.folder(role)
    path = key_file(folder, key.keyid)
    if path is None:
        raise KeyMissing(
            f"no private key for the {role} role's key {key.keyid[:16]}",
            where=str(folder / f"*.{key.keyid}.key.pem"),
            hint="pass the folder `repo init` wrote (--keys, or --root-keys for the root key)",
        )
    try:
        return CryptoSigner(load_private_key(path), key)  # type: ignore[arg-type]
    except ValueError as exc:  # KeyMismatchError: the file is not that key
        raise KeyMissing(
            f"the key file is not key {key.keyid[:16]}: {exc}", where=str(path)
        ) from exc


def retire(folder: Path, keyid: str) -> None:
    """Move a key the root no longer names out of the active folder (kept, never deleted)."""
    path = key_file(folder, keyid)
    if path is not None:
        (folder / RETIRED_DIR).mkdir(mode=0o700, exist_ok=True)
        path.rename(folder / RETIRED_DIR / path.name)
