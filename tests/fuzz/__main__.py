"""Run every fuzz campaign: `python -m tests.fuzz [--seed N] [--scale F] [--only NAME ...]`.

Writes build/fuzz/<campaign>.json (tinyrustlm.fuzz-campaign.v1) atomically, prints one line
of counts per campaign, and exits 1 if any campaign broke its contract (`failed` > 0).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[2]
# The campaigns, in run order. bundle_mutation comes from issue 15a and may not exist yet.
CAMPAIGNS = ("bundle_mutation", "parser_mutation", "model_mutation")
FALLBACK_COUNT = 1000  # for a campaign module without DEFAULT_COUNT


def campaigns() -> dict[str, ModuleType]:
    found = {}
    for name in CAMPAIGNS:
        try:
            found[name] = importlib.import_module(f"tests.fuzz.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tests.fuzz.{name}":
                raise  # the campaign exists but one of its imports is missing: say so
    return found


def _as_json(result: Any) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        out: dict[str, Any] = result.model_dump(mode="json", by_alias=True)
        return out
    return dict(result)


def _failed(doc: dict[str, Any]) -> int:
    """Cases that broke the contract: `failed` (tinyrustlm.fuzz-campaign.v1), or for the
    bundle campaign's counts, the mutants accepted or crashed (each must be refused)."""
    if "failed" in doc:
        return int(doc["failed"])
    return int(doc.get("accepted", 0)) + int(doc.get("crashed", 0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply every campaign's default case count (0.01: a smoke run)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this campaign (repeatable)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "build" / "fuzz")
    args = parser.parse_args(argv)
    found = campaigns()
    unknown = sorted(set(args.only) - set(found))
    if unknown:
        parser.error(f"unknown campaign(s) {unknown}; known: {sorted(found)}")
    args.out.mkdir(parents=True, exist_ok=True)
    broken = 0
    for name, module in found.items():
        if args.only and name not in args.only:
            continue
        count = max(1, int(getattr(module, "DEFAULT_COUNT", FALLBACK_COUNT) * args.scale))
        doc = _as_json(module.run(seed=args.seed, count=count))
        path = args.out / f"{name}.json"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
        failed = _failed(doc)
        broken += failed > 0
        print(f"{name}: {doc.get('count', count)} cases, {failed} failed, "
              f"compared {doc.get('compared', {})} -> {path}")  # fmt: skip
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
