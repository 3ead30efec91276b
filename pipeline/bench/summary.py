"""The lane bench's arithmetic (pure functions, no I/O): repetitions to medians with their
spreads, bandwidth and roofline, the targets (policy as data) and the printed table.
"""

from __future__ import annotations

from typing import Any

from pipeline.bench.stats import Target, figures_of, spread, target_rows

# The targets (policy as data): figure names are those of stats.figures_of over the
# rows `summarize` makes.
TARGETS = (
    Target(
        "simd128 / scalar q8 matvec (cache)",
        "kernel:simd128:w_gate-2816x1024",
        "kernel:scalar:w_gate-2816x1024",
        5.0,
    ),
    Target(
        "simd128 / scalar q8 matvec (stream)",
        "kernel:simd128:stream-16384x4096",
        "kernel:scalar:stream-16384x4096",
        5.0,
    ),
    Target("simd128 / scalar decode", "run:simd128", "run:scalar", 2.5),
    Target("simd128 prefill / decode", "prefill:simd128", "run:simd128", 4.0),
    Target("threads(2) / threads(1) decode", "run:threads-2", "run:threads-1", 1.8),
    Target("threads(1) / simd128 decode", "run:threads-1", "run:simd128", 0.95),
    Target("threads(2) decode / roofline", "run:threads-2", "roofline", 0.7),
    # the integer tier (issue 25)
    Target("int8 / f32 simd128 decode", "run:simd128-int8", "run:simd128", 1.6),
    Target("int8 simd128 prefill / decode", "prefill:simd128-int8", "run:simd128-int8", 4.0),
    Target(
        "int8 simd128 / scalar q8 mv (stream)",
        "kernel:simd128:stream-16384x4096-int8",
        "kernel:scalar:stream-16384x4096",
        5.0,
    ),
    Target("int8 threads(2) / threads(1) decode", "run:threads-2-int8", "run:threads-1-int8", 1.9),
    Target("int8 simd128 decode / 1-thread probe", "run:simd128-int8", "roofline:1-thread", 0.7),
    # the relaxed lanes' integer tier (issue 32)
    Target(
        "relaxed / simd128 int8 q8 mv (stream)",
        "kernel:relaxed-simd128:stream-16384x4096-int8",
        "kernel:simd128:stream-16384x4096-int8",
        1.5,
    ),
    Target("relaxed int8 / f32 simd128 decode", "run:relaxed-simd128-int8", "run:simd128", 1.6),
    Target(
        "relaxed int8 prefill / decode",
        "prefill:relaxed-simd128-int8",
        "run:relaxed-simd128-int8",
        4.0,
    ),
    Target(
        "relaxed int8 threads(2) / threads(1)",
        "run:relaxed-threads-2-int8",
        "run:relaxed-threads-1-int8",
        1.8,
    ),
    Target(
        "relaxed int8 decode / 1-thread probe",
        "run:relaxed-simd128-int8",
        "roofline:1-thread",
        0.7,
    ),
)


def _with_spread(target: dict[str, Any], key: str, samples: list[float]) -> None:
    s = spread(samples)
    target[key], target[f"{key}_min"], target[f"{key}_max"] = s["median"], s["min"], s["max"]
    target[f"{key}_samples"] = s["samples"]


def summarize(reps: list[dict[str, Any]], weights: int, n_prompt: int) -> dict[str, Any]:
    """Medians and spreads of the repetitions (each: the runner's document with the native run
    appended to `runs`), effective bandwidth, roofline fractions and the targets."""
    kernels: dict[str, dict[str, Any]] = {}
    for lane, shapes in reps[0]["kernels"].items():
        kernels[lane] = {}
        for shape, first in shapes.items():
            m: dict[str, Any] = {"weight_bytes": first["weight_bytes"]}
            for key in ("gbps", "ms_per_matvec"):
                _with_spread(m, key, [r["kernels"][lane][shape][key] for r in reps])
            kernels[lane][shape] = m
    bandwidth: dict[str, Any] = {}
    for threads in reps[0]["bandwidth_gbps"]:
        bandwidth[threads] = {}
        _with_spread(bandwidth[threads], "gbps", [r["bandwidth_gbps"][threads] for r in reps])
    best = max(bandwidth.values(), key=lambda b: b["gbps"]) if bandwidth else None
    roof: dict[str, Any] = {}
    if best:
        roof = {
            "roofline_tokens_per_s": best["gbps"] * 1e9 / weights,
            "roofline_tokens_per_s_min": best["gbps_min"] * 1e9 / weights,
            "roofline_tokens_per_s_max": best["gbps_max"] * 1e9 / weights,
        }
    one = bandwidth.get("1")
    if one:
        roof |= {
            "roofline_1thread_tokens_per_s": one["gbps"] * 1e9 / weights,
            "roofline_1thread_tokens_per_s_min": one["gbps_min"] * 1e9 / weights,
            "roofline_1thread_tokens_per_s_max": one["gbps_max"] * 1e9 / weights,
        }
    runs, prefill_runs = [], []
    for i, first in enumerate(reps[0]["runs"]):
        series = [r["runs"][i] for r in reps]
        run = {k: first[k] for k in ("name", "workers") if k in first}
        run |= {k: first[k] for k in ("lane", "module_sha256") if k in first}
        _with_spread(run, "tokens_per_s", [1000.0 / r["decode_ms"] for r in series])
        run["decode_ms_median"] = spread([r["decode_ms"] for r in series])["median"]
        run["effective_gbps"] = run["tokens_per_s"] * weights / 1e9
        roofline = roof.get("roofline_tokens_per_s")
        run["roofline_fraction"] = run["tokens_per_s"] / roofline if roofline else None
        runs.append(run)
        pre: dict[str, Any] = {k: run[k] for k in ("name", "workers", "module_sha256") if k in run}
        pre["prompt_tokens"] = n_prompt
        _with_spread(pre, "tokens_per_s", [n_prompt * 1000.0 / r["prefill_ms"] for r in series])
        _with_spread(pre, "prefill_ms", [r["prefill_ms"] for r in series])
        _with_spread(pre, "ttft_ms", [r["ttft_ms"] for r in series])
        if "load_ms" in first:  # browser runs: load() itself, where the cache state tells
            _with_spread(pre, "load_ms", [r["load_ms"] for r in series])
        prefill_runs.append(pre)
    doc: dict[str, Any] = {
        "kernels": kernels,
        "bandwidth": bandwidth,
        "bandwidth_gbps": best["gbps"] if best else None,
        **roof,
        "runs": runs,
        "prefill_runs": prefill_runs,
    }
    doc["targets"] = target_rows(figures_of(doc), TARGETS)
    return doc


def _range(obj: dict[str, Any], key: str, fmt: str = ".1f") -> str:
    return f"{obj[key]:{fmt}} ({obj[f'{key}_min']:{fmt}}-{obj[f'{key}_max']:{fmt}})"


def table(doc: dict[str, Any]) -> str:
    model, machine = doc["model"], doc["machine"]
    reps = doc["method"]["reps"]
    lines = [
        f"bench model: {model['preset']} ({model['weight_bytes_per_token'] / 1e6:.1f} MB of "
        f"weights per token, context {model['context']}); medians of {reps} interleaved "
        f"repetitions (min-max); load {machine['load_average']}",
        "",
        f"{'read bandwidth':<24}{'GB/s':>24}",
    ]
    for threads, b in doc["bandwidth"].items():
        lines.append(f"{threads + ' thread(s)':<24}{_range(b, 'gbps'):>24}")
    if doc.get("roofline_tokens_per_s"):
        lines.append(f"{'roofline tok/s':<24}{_range(doc, 'roofline_tokens_per_s', '.0f'):>24}")
    if doc.get("roofline_1thread_tokens_per_s"):
        one = _range(doc, "roofline_1thread_tokens_per_s", ".0f")
        lines.append(f"{'roofline 1 thread tok/s':<24}{one:>24}")
    lines += ["", f"{'q8 matvec kernel':<36}{'GB/s':>24}"]
    lines += [
        f"{lane + ' ' + shape:<36}{_range(m, 'gbps', '.2f'):>24}"
        for lane, shapes in doc["kernels"].items()
        for shape, m in shapes.items()
    ]
    lines += ["", f"{'decode':<16}{'tok/s':>24}{'ms/token':>10}{'eff. GB/s':>11}{'roofline':>10}"]
    for r in doc["runs"]:
        frac = r["roofline_fraction"]
        lines.append(
            f"{r['name']:<16}{_range(r, 'tokens_per_s'):>24}{r['decode_ms_median']:>10.2f}"
            f"{r['effective_gbps']:>11.2f}{'' if frac is None else f'{frac:>9.0%}':>10}"
        )
    n = doc["method"]["prompt_tokens"]
    lines += ["", f"{f'prefill ({n} tokens)':<24}{'tok/s':>24}{'time to first token ms':>28}"]
    for r in doc["prefill_runs"]:
        lines.append(f"{r['name']:<24}{_range(r, 'tokens_per_s'):>24}{_range(r, 'ttft_ms'):>28}")
    loads = [r for r in doc["prefill_runs"] if r.get("load_ms") is not None]
    if loads:
        lines += ["", f"{'js/loader.js load()':<24}{'ms':>24}  lane, cache state"]
    for r in loads:
        on = r["ran_on"]
        said = f"{on['lane']}, {on['cache']['loader']}"
        lines.append(f"{r['name']:<24}{_range(r, 'load_ms', '.0f'):>24}  {said}")
    lines += ["", f"{'target':<34}{'want':>7}{'got':>8}{'range':>16}  met"]
    for t in doc["targets"]:
        got = "-" if t["measured"] is None else f"{t['measured']:.2f}"
        rng = "" if t["measured_range"] is None else "{:.2f}-{:.2f}".format(*t["measured_range"])
        lines.append(f"{t['target']:<34}{t['at_least']:>7.2f}{got:>8}{rng:>16}  {t['met']}")
    lines.append("modules: " + ", ".join(f"{k} {v[:16]}" for k, v in doc["modules"].items()))
    return "\n".join(lines)
