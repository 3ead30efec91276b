"""An independent Python statement of the sampler: the reference's sampling order
(runtime-architecture.md, "Deterministic sampling contract", steps 1-11) with the choices
CONTRACT.md §3 writes down, on f32ref's exact f32 arithmetic and its PCG32. Written from the
documents, not from sampler.rs; the sampler goldens and the end-to-end token goldens are
checked against it, so a regenerated golden cannot absorb a sampler bug."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tests.crates.runtime.f32ref import InvalidArgument, NumericalFailure, Pcg32, exp_det, f32

EOS = 257
NEG_INF = -math.inf


@dataclass(frozen=True)
class Config:
    temperature: float
    top_k: int
    top_p: float
    repetition_penalty: float

    def validate(self) -> None:
        t, p, r = self.temperature, self.top_p, self.repetition_penalty
        if not (math.isfinite(t) and t >= 0 and 0 < p <= 1 and math.isfinite(r) and r > 0):
            raise InvalidArgument


def uniform(rng: Pcg32) -> float:
    """u = (r >> 8) * 2^-24, exact."""
    return (rng.next_u32() >> 8) * 2.0**-24


def _masked(mask: bytes, i: int) -> bool:
    return i // 8 < len(mask) and bool(mask[i // 8] & (1 << (i % 8)))


def _stable_probabilities(values: Sequence[float]) -> list[float]:
    """Softmax over the survivors (in their order); the +inf rule as the softmax kernel."""
    top = max(values)
    if top == math.inf:
        share = f32(1.0 / sum(1 for v in values if v == math.inf))
        return [share if v == math.inf else 0.0 for v in values]
    e = [exp_det(f32(v - top)) for v in values]
    z = 0.0
    for v in e:
        z = f32(z + v)
    if not z > 0.0 or z == math.inf:
        raise NumericalFailure
    return [f32(v / z) for v in e]


def sample(
    logits: Sequence[float], history: Sequence[int], config: Config, rng: Pcg32, mask: bytes = b""
) -> int:
    config.validate()
    if not logits:
        raise InvalidArgument
    # 1. copy in token-id order; 2. forbidden -> -inf
    v = [NEG_INF if _masked(mask, i) else x for i, x in enumerate(logits)]
    # 3. repetition penalty, once per distinct token of the context
    p = config.repetition_penalty
    for t in sorted(set(history)):
        if t < len(v):
            if v[t] > 0:
                v[t] = f32(v[t] / p)
            elif v[t] < 0:
                v[t] = f32(v[t] * p)
    # 4. NaN -> -inf; 5. -0 -> +0
    v = [NEG_INF if math.isnan(x) else (0.0 if x == 0 else x) for x in v]
    if all(x == NEG_INF for x in v):
        raise NumericalFailure
    # 6. temperature 0: greatest logit, lowest id on ties, no draw
    if config.temperature == 0:
        best = max(v)
        return v.index(best)
    # 7. v / T
    v = [f32(x / config.temperature) for x in v]
    # 8. top-k over (logit desc, id asc) of the eligible tokens
    candidates = sorted((i for i, x in enumerate(v) if x != NEG_INF), key=lambda i: (-v[i], i))
    if config.top_k > 0:
        candidates = candidates[: config.top_k]
    # 9. stable probabilities; 10. (p desc, id asc)
    probs = dict(zip(candidates, _stable_probabilities([v[i] for i in candidates]), strict=True))
    order = sorted(candidates, key=lambda i: (-probs[i], i))
    # 11. top-p: the minimal prefix with cumulative >= p (at least one token)
    kept = order
    if config.top_p < 1:
        cumulative = 0.0
        for n, i in enumerate(order, start=1):
            cumulative = f32(cumulative + probs[i])
            if cumulative >= config.top_p:
                kept = order[:n]
                break
    # the draw: one u, r = u * sum(kept), first with r < cumulative, else the last kept
    total = 0.0
    for i in kept:
        total = f32(total + probs[i])
    r = f32(uniform(rng) * total)
    cumulative = 0.0
    for i in kept:
        cumulative = f32(cumulative + probs[i])
        if r < cumulative:
            return i
    return kept[-1]
