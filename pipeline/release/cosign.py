"""`tinyrustlm-release sign BUNDLE --key PEM --trusted-keys FILE`: a maintainer co-signs a bundle.

The key's signature is added to the DSSE envelopes of manifest.sigstore.json and
provenance.sigstore.json (the manifest and the provenance statement, byte for byte as they
are); SHA256SUMS and the tarball are derived again from the files (`bundle_contents`), and
the folder is replaced in one step under the release lock (`write_bundle_locked`). Nothing
else changes: not the manifest, the artifacts, the build id or the other signatures. A key
that already signed is refused, and so is a bundle whose SHA256SUMS or tarball does not match
its files (re-deriving them would hide that).

Nothing is co-signed unverified: before any signature is made, the bundle's bytes (as read,
under the lock) are copied to a private folder and run through the full `verify bundle`
(every step: signatures that verify, manifest, digests, file set, provenance, SBOM, builder
paths, checksums, report, conformance) against the trust the maintainer gives
(`--trusted-keys`), with every signing rule's threshold counted as 1 — a co-signature is how
a threshold is reached, so being short of it is the one thing that may still be true. Any
other refusal stops `sign` (`sign.unverified`) before a byte of the bundle changes. A tarball
is no bundle folder, nor is a folder inside a bundle (`sign.not-a-bundle`, refused before the
lock is taken): the release lock lives beside the bundle folder, never in it, so `sign` adds
no file.

`--keyless` adds manifest.keyless.sigstore.json instead (or as well): a Sigstore bundle over
manifest.json by the CI job's ambient OIDC identity (`pipeline.documents.keyless`).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pipeline.documents.keyless import sign_keyless
from pipeline.documents.keys import load_private_key
from pipeline.documents.sign import AlreadySigned, add_signature
from pipeline.errors import EXIT_OK, CheckFailed, TabledError
from pipeline.release.bundle import bundle_contents, release_lock, write_bundle_locked
from verify.bundle.dsse import keyid_of, parse_sigstore_bundle
from verify.bundle.keyless import KEYLESS_SIGNATURE
from verify.bundle.layout import (
    CHECKSUMS,
    MANIFEST,
    MANIFEST_SIGNATURE,
    PROVENANCE_SIGNATURE,
    bundle_name,
    tarball_name,
)
from verify.bundle.opened import read_bundle_file
from verify.bundle.report_check import Deriver
from verify.bundle.trusted_keys import TrustedKey, TrustRoot, load_trust_root, trust_root_from_keys
from verify.bundle.verifier import BundleVerifier, Requirements, Verdict
from verify.errors import VerifyError
from verify.formats.manifest import ModuleManifest
from verify.shell.arguments import add_trust_arguments
from verify.shell.result import Outcome


class CoSignUsage(TabledError):
    """`sign` was not given a bundle folder or a key."""

    table: ClassVar[Mapping[str, str]] = {
        "sign.not-a-bundle": "sign dist/tinyrustlm-<version>/ (the folder, not the tarball)",
        "sign.no-key": "pass --key PEM or --keyless",
        "sign.trusted-keys": "give --trusted-keys the release's trusted-keys or trust-policy file",
    }


CO_SIGNED = (MANIFEST_SIGNATURE, PROVENANCE_SIGNATURE)


class CoSignRefused(CheckFailed):
    """The bundle cannot be co-signed as it is (already signed by this key, inconsistent)."""

    error_id = "sign.refused"
    default_hint = (
        "co-sign only a bundle as `release` or another `sign` left it, with a key that has not "
        "signed it yet"
    )


class CoSignUnverified(CheckFailed):
    """The bundle, co-signed, would not pass `verify bundle` (short of a threshold aside)."""

    error_id = "sign.unverified"
    default_hint = (
        "co-sign only what `tinyrustlm-verify bundle` accepts: run it with the same "
        "--trusted-keys to see the failing step"
    )


@dataclass(frozen=True)
class CoSignTrust:
    """What `sign` verifies the bundle against before it adds a signature."""

    root: TrustRoot | Mapping[str, TrustedKey]
    allow_dev_key: bool = False
    derive: Deriver | None = None  # verify's report maker (None: verify.inspect)


def _counting_to_one(trust: TrustRoot | Mapping[str, TrustedKey]) -> TrustRoot:
    """`trust` with every rule's threshold 1: what a bundle still waiting for co-signatures
    must already pass (its keys, windows, revocations and key classes unchanged)."""
    root = trust if isinstance(trust, TrustRoot) else trust_root_from_keys(trust)
    rules = {doc: dataclasses.replace(rule, threshold=1) for doc, rule in root.rules.items()}
    return dataclasses.replace(root, rules=rules)


def verify_as_is(contents: Mapping[str, bytes], name: str, trust: CoSignTrust, now: int) -> Verdict:
    """The full `verify bundle` of `contents` (bundle path -> bytes), in a private folder."""
    verifier = BundleVerifier(_counting_to_one(trust.root), derive=trust.derive)
    try:
        return verifier.verify_files(contents, name, Requirements(now, trust.allow_dev_key))
    except VerifyError as exc:
        raise CoSignUnverified(
            f"the bundle does not pass `verify bundle`: [{exc.error_id}] {exc.message}",
            where=f"{name}/{exc.where}" if exc.where else name,
        ) from exc


@dataclass(frozen=True)
class CoSigned:
    bundle: Path
    keyid: str  # "" when only a keyless signature was added
    signers: dict[str, tuple[str, ...]]  # signature file -> keyids now on it
    rewritten: tuple[str, ...]  # the files whose bytes changed


def _require_bundle_folder(bundle: Path) -> None:
    """`bundle` is a bundle folder (not a tarball, not a folder inside a bundle), so the
    release lock `sign` holds in its parent lands beside it."""
    inside = next((p for p in bundle.parents if (p / MANIFEST).is_file()), None)
    if bundle.is_symlink() or not bundle.is_dir() or inside is not None:
        raise CoSignUsage(
            "not a bundle folder"
            + (f" (it is inside the bundle {inside})" if inside is not None else ""),
            where=str(bundle),
            hint="sign dist/tinyrustlm-<version>/ (the folder, not the tarball)",
            error_id="sign.not-a-bundle",
        )


def _read_folder(bundle: Path) -> dict[str, bytes]:
    if bundle.is_symlink() or not bundle.is_dir():
        raise CoSignUsage(
            "not a bundle folder",
            where=str(bundle),
            hint="sign dist/tinyrustlm-<version>/",
            error_id="sign.not-a-bundle",
        )
    files: dict[str, bytes] = {}
    for path in sorted(bundle.rglob("*")):
        rel = path.relative_to(bundle).as_posix()
        if path.is_symlink() or not (path.is_dir() or path.is_file()):
            raise CoSignRefused("not a regular file: a bundle holds none", where=rel)
        if path.is_file():
            files[rel] = read_bundle_file(path, rel)  # never a FIFO, never past its limit
    return files


def _manifest(files: dict[str, bytes], bundle: Path) -> ModuleManifest:
    try:
        return ModuleManifest.model_validate_json(files[MANIFEST], strict=True)
    except (KeyError, ValueError) as exc:
        raise CoSignRefused(
            f"no readable manifest.json: {exc}", where=str(bundle / MANIFEST)
        ) from None


def cosign_bundle(
    bundle: Path, key_path: Path | None, keyless: bool = False, *, trust: CoSignTrust
) -> CoSigned:
    """Add `key_path`'s signature (and/or a keyless one) to `bundle`, only if the bundle so
    signed passes `verify bundle` against `trust` (thresholds counted as 1)."""
    if key_path is None and not keyless:
        raise CoSignUsage(
            "nothing to sign with",
            where="sign",
            hint="pass --key or --keyless",
            error_id="sign.no-key",
        )
    _require_bundle_folder(bundle)  # before the lock: its file goes beside the folder, never in
    key = None if key_path is None else load_private_key(key_path)
    keyid = "" if key is None else keyid_of(key.public_key())
    dist = bundle.parent
    with release_lock(dist):
        files = _read_folder(bundle)
        manifest = _manifest(files, bundle)
        version = manifest.version
        if bundle.name != bundle_name(version):
            raise CoSignRefused(
                f"the folder of version {version} is named {bundle.name!r}, "
                f"not {bundle_name(version)!r}",
                where=str(bundle),
            )
        tarball = tarball_name(version)
        native = frozenset(a.url for a in manifest.native_artifacts)
        documents = {n: d for n, d in files.items() if n not in (CHECKSUMS, tarball)}
        as_is = bundle_contents(version, documents, manifest.source_date_epoch, native)
        differs = sorted(n for n in as_is.keys() | files.keys() if as_is.get(n) != files.get(n))
        if differs:
            raise CoSignRefused(
                f"{', '.join(differs)} do(es) not match the bundle's files; co-signing "
                "would re-derive them and hide the difference",
                where=str(bundle / differs[0]),
                hint="co-sign only a bundle `tinyrustlm-verify bundle` accepts",
            )
        verify_as_is(files, bundle.name, trust, int(time.time()))  # before anything is signed
        signers: dict[str, tuple[str, ...]] = {}
        if keyless:
            if KEYLESS_SIGNATURE in files:
                raise CoSignRefused(
                    "the bundle already has a keyless signature",
                    where=str(bundle / KEYLESS_SIGNATURE),
                )
            documents[KEYLESS_SIGNATURE] = sign_keyless(files[MANIFEST])
        for name in CO_SIGNED if key is not None else ():
            assert key is not None
            try:
                if name == MANIFEST_SIGNATURE:
                    signed = parse_sigstore_bundle(files[name], name).envelope.payload
                    if signed != files[MANIFEST]:
                        raise CoSignRefused(
                            "manifest.json is not the signed manifest payload",
                            where=str(bundle / MANIFEST),
                        )
                documents[name] = add_signature(key, files[name], name)
            except KeyError:
                raise CoSignRefused(
                    "signature bundle is missing", where=str(bundle / name)
                ) from None
            except AlreadySigned as exc:
                raise CoSignRefused(
                    f"key {keyid[:16]}… has already signed this bundle ({name}); a threshold "
                    "counts distinct keys, so a second signature by one key adds nothing",
                    where=str(bundle / name),
                    hint="the other maintainer co-signs with their own key",
                ) from exc
            except VerifyError as exc:
                raise CoSignRefused(
                    f"[{exc.error_id}] {exc.message}", where=str(bundle / exc.where)
                ) from exc
            envelope = parse_sigstore_bundle(documents[name], name).envelope
            signers[name] = tuple(s.keyid for s in envelope.signatures)
        contents = bundle_contents(version, documents, manifest.source_date_epoch, native)
        rewritten = tuple(sorted(n for n in contents if contents[n] != files.get(n)))
        write_bundle_locked(dist, version, contents, force=True, executable=native, hint="")
    return CoSigned(bundle, keyid, signers, rewritten)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", type=Path, help="the bundle folder, dist/tinyrustlm-<version>")
    add_trust_arguments(
        parser,
        "the bundle, with your signature, must pass `verify bundle` against it (every rule's "
        "threshold counted as 1) before anything is signed",
    )
    parser.add_argument(
        "--key", type=Path, default=None, help="your Ed25519 private key PEM (`keygen`)"
    )
    parser.add_argument(
        "--keyless",
        action="store_true",
        help="also sign manifest.json with Sigstore keyless, from the CI job's ambient OIDC "
        "credential (GitHub Actions: permissions: id-token: write)",
    )


def run(args: argparse.Namespace) -> Outcome:
    _require_bundle_folder(args.bundle)
    try:
        root = load_trust_root(args.trusted_keys)
    except VerifyError as exc:
        raise CoSignUsage(
            f"unreadable trusted keys: [{exc.error_id}] {exc.message}",
            where=exc.where or str(args.trusted_keys),
            error_id="sign.trusted-keys",
        ) from exc
    trust = CoSignTrust(root, allow_dev_key=args.allow_dev_key)
    done = cosign_bundle(args.bundle, args.key, args.keyless, trust=trust)
    with_what = f"key {done.keyid}" if done.keyid else "nothing"
    print(f"co-signed  {done.bundle} with {with_what}{' + keyless' if args.keyless else ''}")
    for name, keyids in done.signers.items():
        print(f"  {name}: {len(keyids)} signature(s): {', '.join(k[:16] for k in keyids)}")
    print(f"rewritten  {', '.join(done.rewritten)}")
    return Outcome(
        EXIT_OK,
        {
            "bundle": str(done.bundle),
            "keyid": done.keyid,
            "keyless": bool(args.keyless),
            "signers": {name: list(keyids) for name, keyids in done.signers.items()},
            "rewritten": list(done.rewritten),
        },
    )
