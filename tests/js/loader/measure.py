"""Loader measurements in headless Chromium (never a test):
`python -m tests.js.loader.measure BUNDLE DEV_KEY_PEM [--runs N] [--engines chromium,firefox]`.

1. Time from page load to first token per lane and engine, cold (a fresh profile) and warm (the
   same profile's second page load: modules and model from the content-addressed cache), the
   golden prompt, 8 tokens; the time is performance.now() at the first streamed token, i.e.
   since navigation start. Median, min and max of N runs; bytes the server sent on the warm load.
2. Peak memory of a 77 MB model (`bench` preset) loaded into the simd128 lane: the browser's
   total RSS (every process of its group, sampled every 10 ms) minus the same page's with the
   `small` model, as a multiple of the model's size (the model's copy in Wasm memory is 1.0x).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pipeline.modelpack import PRESETS, pack
from pipeline.serve import STALL, Site, start
from tests.js.loader.cases import Case, Env
from tests.js.loader.conftest import GOLDEN, STALLED_WORKER
from tests.js.loader.site import SCALAR_LANE, SIMD_LANE, THREADS_LANE, make_site
from tests.js.loader.test_loader_chromium import run_page

DENY = {THREADS_LANE: [], SIMD_LANE: [THREADS_LANE], SCALAR_LANE: [THREADS_LANE, SIMD_LANE]}
PAGE = 4096


def group_rss(pgid: int) -> int:
    """Resident bytes of every process in process group `pgid`."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # field 5 (pgrp), after pid and (comm)
            total += int(fields[21]) * PAGE  # field 24: rss in pages
    return total


class Sampler:
    def __init__(self) -> None:
        self.peak = 0
        self.stop = threading.Event()

    def start(self, pgid: int) -> None:
        def run() -> None:
            while not self.stop.is_set():
                self.peak = max(self.peak, group_rss(pgid))
                time.sleep(0.01)

        threading.Thread(target=run, daemon=True).start()


def bytes_sent(site: Path, served: Site, paths: list[str]) -> int:
    total = 0
    for p in paths:
        body = served.overrides.get(p)
        if body is not None:
            total += len(body)
        elif (target := served.resolve(p)) is not None:
            total += target.stat().st_size
    return total


def first_token(
    served: Site, url: str, site: Path, env: Env, lane: str, profile: Path, engine: str
) -> tuple[float, int, dict[str, Any]]:
    prompt = json.loads(GOLDEN.read_text())[0]["params"]["prompt"]
    case = Case(lane, prompt=prompt, max_tokens=8, options={"denyLanes": DENY[lane]})
    served.requests.clear()
    page = run_page((served, url), site, [case.spec(env)], env.model_sha256, profile, engine=engine)
    result = page["results"][0]
    assert result.get("lane") == lane, result
    return result["firstTokenSinceStartMs"], bytes_sent(site, served, served.requests), result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("dev_key", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engines", default="chromium")
    args = parser.parse_args()
    model = pack(PRESETS["small"], 7)
    sha = hashlib.sha256(model).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        site = make_site(Path(tmp) / "site", args.bundle, args.dev_key, model)
        served = Site(routes=[("/", site)], isolated=True, overrides={STALLED_WORKER: STALL})
        server, url = start(served)
        env = Env(url, url, sha, f"{url}{STALLED_WORKER.lstrip('/')}", len(model))
        try:
            for engine in args.engines.split(","):
                for lane in DENY:
                    cold, warm, warm_bytes, cold_bytes = [], [], [], []
                    fetched: list[Any] = []
                    for run in range(args.runs):
                        profile = Path(tmp) / f"{engine}-{lane}-{run}"
                        t, b, _ = first_token(served, url, site, env, lane, profile, engine)
                        cold.append(t)
                        cold_bytes.append(b)
                        t, b, result = first_token(served, url, site, env, lane, profile, engine)
                        warm.append(t)
                        warm_bytes.append(b)
                        fetched = result["receipt"]["fetched"]
                    print(
                        f"{engine} {lane}: cold median {statistics.median(cold):.0f} ms "
                        f"(min {min(cold):.0f}, max {max(cold):.0f}), warm median "
                        f"{statistics.median(warm):.0f} ms (min {min(warm):.0f}, max "
                        f"{max(warm):.0f}), n={args.runs}; bytes sent cold "
                        f"{statistics.median(cold_bytes):.0f}, warm "
                        f"{statistics.median(warm_bytes):.0f}; warm receipt fetched "
                        f"{[(f['what'], f['cache']) for f in fetched]}",
                        flush=True,
                    )
            # 2. peak memory of a big model's load (Chromium)
            big = pack(PRESETS["bench"], 7)
            served.overrides["/big.trlm"] = big
            peaks = {}
            for name, spec in (
                ("small", {"url": f"{url}model.trlm", "size": len(model), "sha256": sha}),
                (
                    "big",
                    {
                        "url": f"{url}big.trlm",
                        "size": len(big),
                        "sha256": hashlib.sha256(big).hexdigest(),
                    },
                ),
            ):
                runs = []
                for run in range(args.runs):
                    case = Case(
                        name, options={"denyLanes": DENY[SIMD_LANE], "cache": "none", "model": spec}
                    )
                    sampler = Sampler()
                    profile = Path(tmp) / f"mem-{name}-{run}"
                    page = run_page(
                        (served, url), site, [case.spec(env)], sha, profile, on_start=sampler.start
                    )
                    sampler.stop.set()
                    assert "error" not in page["results"][0], page
                    runs.append(sampler.peak)
                peaks[name] = statistics.median(runs)
                print(
                    f"peak browser RSS, {name} model: median {peaks[name] / 2**20:.1f} MiB {runs}"
                )
            extra = peaks["big"] - peaks["small"]
            print(
                f"model {len(big) / 2**20:.1f} MiB: peak RSS +{extra / 2**20:.1f} MiB over the "
                f"small model's page = {extra / (len(big) - len(model)):.2f}x the model's size"
            )
        finally:
            server.shutdown()
            server.server_close()
    os.sync()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
