"""Time from page load to first token per lane in headless Chromium (a measurement, never a
test): `python -m tests.js.loader.measure BUNDLE DEV_KEY_PEM [--runs N]`. Each run is a fresh
browser and profile loading the test page, which runs one lane (the better lanes denied) with
the golden prompt; the time is performance.now() at the first streamed token, i.e. since
navigation start. Prints per lane the median, min and max of N runs, and one receipt each.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
from pathlib import Path

from pipeline.modelpack import PRESETS, pack
from pipeline.serve import STALL, Site, start
from tests.js.loader.cases import Case
from tests.js.loader.conftest import GOLDEN, STALLED_WORKER
from tests.js.loader.site import SCALAR_LANE, SIMD_LANE, THREADS_LANE, make_site
from tests.js.loader.test_loader_chromium import run_page

DENY = {THREADS_LANE: [], SIMD_LANE: [THREADS_LANE], SCALAR_LANE: [THREADS_LANE, SIMD_LANE]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("dev_key", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    prompt = json.loads(GOLDEN.read_text())[0]["params"]["prompt"]
    model = pack(PRESETS["small"], 7)
    sha = hashlib.sha256(model).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        site = make_site(Path(tmp) / "site", args.bundle, args.dev_key, model)
        served = Site(routes=[("/", site)], isolated=True, overrides={STALLED_WORKER: STALL})
        server, url = start(served)
        try:
            for lane, deny in DENY.items():
                times, loads, before, receipt = [], [], [], None
                for run in range(args.runs):
                    case = Case(lane, prompt=prompt, max_tokens=8, options={"denyLanes": deny})
                    page = run_page((served, url), site, [case], sha, Path(tmp) / f"p{lane}{run}")
                    result = page["results"][0]
                    assert result["lane"] == lane, result
                    times.append(result["firstTokenSinceStartMs"])
                    loads.append(result["loadMs"])
                    before.append(result["firstTokenSinceStartMs"] - result["firstTokenMs"])
                    receipt = result["receipt"]
                print(
                    f"{lane}: median {statistics.median(times):.0f} ms "
                    f"(min {min(times):.0f}, max {max(times):.0f}, n={len(times)}): "
                    f"{[round(t) for t in times]}; of which before load(): median "
                    f"{statistics.median(before):.0f} ms, load(): median "
                    f"{statistics.median(loads):.0f} ms"
                )
                print(json.dumps(receipt, indent=1))
        finally:
            server.shutdown()
            server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
