"""N seeded prompt x seed x sampler cases, the same on every engine.

Every float is a short dyadic decimal, so the native CLI's decimal parse, JavaScript's
`Math.fround` and Python's struct agree on the exact f32 (no double rounding anywhere).
The kinds cycle so any N >= 7 covers greedy decoding, temperature alone, top-k, top-p,
repetition penalty, all of them at once, and long hot runs that are likely to sample EOS.
"""

from __future__ import annotations

import random

from verify.canonical import canonical_json
from verify.formats.conformance import SamplerCase, case_record, cases_sha256

DEFAULT_CASES = 100
DEFAULT_SEED = 20261130
PROMPTS = (
    "Hello, world",
    "Once upon a time",
    "The quick brown fox",
    "tinyrustlm",
    "0123456789",
    "Q: what is a lane?\nA:",
    "a",
    "The rain in Spain stays mainly",
)
TEMPERATURES = (0.5, 0.75, 1.0, 1.25, 1.5)
TOP_PS = (0.5, 0.75, 0.875, 0.9375)
PENALTIES = (1.125, 1.25, 1.5, 2.0)
# The first long hot run: a prompt and seed whose greedy-free generation on the `small` model
# (seed 1) reaches EOS after 47 tokens, so every N >= 7 exercises the EOS stop. The report's
# `models[].oracle_stops` shows how many cases actually ended at EOS, per tier.
EOS_PROMPT, EOS_SEED, HOT_TEMPERATURE, LONG_RUN_TOKENS = "Hello, world", 3, 2.0, 64
# kind -> (temperature?, top_k?, top_p?, penalty?, long run?)
KINDS: tuple[tuple[str, bool, bool, bool, bool, bool], ...] = (
    ("greedy", False, False, False, False, False),
    ("temperature", True, False, False, False, False),
    ("top-k", True, True, False, False, False),
    ("top-p", True, False, True, False, False),
    ("penalty", False, False, False, True, False),
    ("mixed", True, True, True, True, False),
    ("eos-hunt", True, False, False, False, True),
)


def make_cases(count: int = DEFAULT_CASES, seed: int = DEFAULT_SEED) -> list[SamplerCase]:
    rng = random.Random(seed)
    cases: list[SamplerCase] = []
    for i in range(count):
        kind, hot, top_k, top_p, penalty, long_run = KINDS[i % len(KINDS)]
        prompt = rng.choice(PROMPTS)
        if rng.random() < 0.3:
            prompt += " " + rng.choice(PROMPTS)
        seed, stream = rng.getrandbits(64), rng.getrandbits(16)
        if long_run and i < len(KINDS):
            prompt, seed, stream = EOS_PROMPT, EOS_SEED, 0
        cases.append(
            SamplerCase(
                id=f"{i:03d}-{kind}",
                prompt=prompt,
                seed=seed,
                stream=stream,
                temperature=HOT_TEMPERATURE
                if long_run
                else (rng.choice(TEMPERATURES) if hot else 0.0),
                top_k=rng.choice((1, 2, 5, 40)) if top_k else 0,
                top_p=rng.choice(TOP_PS) if top_p else 1.0,
                repetition_penalty=rng.choice(PENALTIES) if penalty else 1.0,
                max_tokens=LONG_RUN_TOKENS if long_run else rng.randint(4, 16),
            )
        )
    return cases


# the case record (u64 seeds as decimal strings) and the list's digest are the report format's
# (verify recomputes `cases.sha256`): one home, verify/formats/conformance.py
__all__ = ["case_record", "cases_json", "cases_sha256", "make_cases"]


def cases_json(cases: list[SamplerCase]) -> bytes:
    return canonical_json([case_record(c) for c in cases])
