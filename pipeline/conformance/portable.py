"""A loader receipt as the signed report keeps it: nothing of the builder's machine in it.

The loader's receipt records where each file came from (`fetched[].url`) and when it was made
(`created_utc`). In a conformance run those are the builder's: a `file:` URL under a temporary
folder (node), `http://127.0.0.1:<port>/` (the browsers' page server), the time of the run. The
report is signed and published, so a row keeps the receipt with those made builder-independent
and nothing else changed:
  - a fetched URL that names a file of the bundle (it ends with that file's bundle path) becomes
    that bundle path (`artifacts/runtime.<lane>.<sha>.wasm`);
  - `created_utc` becomes the release's SOURCE_DATE_EPOCH.
Two builders running the same release on the same engines write the same receipts; the release
refuses to sign one that still names a builder location (`documents.builder-path`) and
`verify bundle` step 10 refuses it too.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any


def created_utc(epoch: int) -> str:
    """The receipt's time form (`YYYY-MM-DDTHH:MM:SSZ`) of a Unix time."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def bundle_path(url: str, bundle_urls: Iterable[str]) -> str:
    """The bundle path `url` names (the longest one it ends with after a `/`), else `url`."""
    for candidate in sorted(bundle_urls, key=len, reverse=True):
        if url == candidate or url.endswith(f"/{candidate}"):
            return candidate
    return url


def portable_receipt(
    receipt: dict[str, Any] | None, bundle_urls: Iterable[str], source_date_epoch: int
) -> dict[str, Any] | None:
    """`receipt` without the builder's locations and time (see the module docstring)."""
    if receipt is None:
        return None
    urls = list(bundle_urls)
    out = dict(receipt)
    if "created_utc" in out:
        out["created_utc"] = created_utc(source_date_epoch)
    fetched = out.get("fetched")
    if isinstance(fetched, list):
        out["fetched"] = [
            {**f, "url": bundle_path(str(f.get("url", "")), urls)}
            if isinstance(f, dict) and "url" in f
            else f
            for f in fetched
        ]
    return out
