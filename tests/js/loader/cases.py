"""The loader test cases, as data both drivers (node, Chromium) run through runner.mjs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from tests.js.loader.site import LANE_ORDER, SIMD_LANE


@dataclass(frozen=True)
class Env:
    """Where a driver finds things: the server's URL and how it imports the loader."""

    url: str  # http://127.0.0.1:PORT/
    loader_root: str  # node: file:///.../site/ ; browser: the server URL
    model_sha256: str
    stalled_worker: str  # a worker URL that never starts in this environment
    model_size: int = 0  # the model's declared size (the bound of its download)


@dataclass(frozen=True)
class Case:
    name: str
    variant: str = ""  # "" = the bundle as released, else v/<variant>/
    keys: str = "dev"
    options: dict[str, Any] = field(default_factory=dict)
    prompt: str | None = None
    max_tokens: int = 24
    extra: dict[str, Any] = field(default_factory=dict)

    def spec(self, env: Env) -> dict[str, Any]:
        folder = f"v/{self.variant}/" if self.variant else "b/"
        options = {"allowDevKey": True, **self.options}
        if options.get("workerUrl") == "STALLED":
            options["workerUrl"] = env.stalled_worker
        model = {"url": f"{env.url}model.trlm", "size": env.model_size, "sha256": env.model_sha256}
        model.update(options.pop("model", {}))
        spec: dict[str, Any] = {
            "name": self.name,
            "loader": f"{env.loader_root}{folder}js/loader.js",
            "base": f"{env.url}{folder}",
            "keys": f"{env.url}keys/{self.keys}.json",
            "model": model,
            "options": options,
            "maxTokens": self.max_tokens,
            **self.extra,
        }
        if self.prompt is not None:
            spec["prompt"] = self.prompt
        return spec


WRONG_SHA = hashlib.sha256(b"not the model").hexdigest()

# name, case, expected LoaderError code. Every one must leave nothing instantiated (or, for the
# preflight refusal, no model loaded and no runtime alive).
REFUSALS: list[tuple[Case, str]] = [
    (Case("tampered manifest byte", variant="tampered-manifest"), "PayloadMismatch"),
    (Case("tampered signed payload", variant="tampered-signed-payload"), "SignatureInvalid"),
    (Case("signature by an untrusted key", variant="untrusted-key"), "UntrustedKey"),
    (Case("development key without allowDevKey", options={"allowDevKey": False}), "DevelopmentKey"),
    (Case("expired manifest", variant="expired"), "ManifestExpired"),
    (Case("swapped signature files", variant="swapped-signatures"), "WrongPayloadType"),
    (
        Case("module bytes differ from the manifest", variant="module-bytes-differ"),
        "ModuleHashMismatch",
    ),
    (Case("unsupported ABI version", variant="unsupported-abi"), "UnsupportedAbi"),
    (Case("model hash mismatch", options={"model": {"sha256": WRONG_SHA}}), "HashMismatch"),
    (
        Case("model too large for the preflight budget", options={"memoryBudget": 1 << 20}),
        "ModelTooLarge",
    ),
    (Case("trusted keys of another signer", keys="other"), "UntrustedKey"),
    (
        Case("co-signed 2 of 3 required", variant="cosigned", keys="cosigned-3of3"),
        "SignatureThreshold",
    ),
    (Case("a probe's bytes changed", variant="probe-tampered"), "ProbeTampered"),
    (Case("trusted key past its not_after", keys="dev-expired"), "KeyExpired"),
    (
        Case("trusted keys with a keyid that is not the key's", keys="dev-wrong-keyid"),
        "TrustedKeysInvalid",
    ),
    (
        Case("every lane denied", options={"denyLanes": list(LANE_ORDER)}),
        "NoLaneLeft",
    ),
    (
        Case(
            "the only lane left fails its self-test",
            variant="simd-self-test-fails",
            options={"denyLanes": [lane for lane in LANE_ORDER if lane != SIMD_LANE]},
        ),
        "NoLaneLeft",
    ),
]
# refusals that happen after a lane was instantiated: no runtime is left, no model entered it
AFTER_INSTANTIATION = {
    "model too large for the preflight budget",
    # the model streams into the runtime after preflight: tr_model_load never sees it
    "model hash mismatch",
    "the only lane left fails its self-test",
}


def golden_case(name: str, prompt: str, **kw: Any) -> Case:
    return Case(name, prompt=prompt, **kw)


LANES = LANE_ORDER


# the bundle co-signed by two development keys (`sign`), loaded under a 2-of-2 v2 policy
COSIGNED = Case("co-signed 2 of 2", variant="cosigned", keys="cosigned-2of2")


# A worker of the threads lane killed mid-prefill, then load() twice more on the same page
# against the same site: the next load skips the failed lane (`LaneFailed`) and runs simd128 to
# the golden tokens; `retryFailedLanes` runs the threads lane again (and the page's failure
# record is then forgotten, so later cases see every lane).
WORKER_DIES = "a worker dies mid-prefill"
AFTER_DEATH = "the next load after a worker died"
RETRY_AFTER_DEATH = "retryFailedLanes after a worker died"


def worker_death_cases(prompt: str) -> list[Case]:
    return [
        Case(WORKER_DIES, prompt=prompt, options={"prefillChunk": 1}, extra={"killWorkerAt": 5}),
        Case(AFTER_DEATH, prompt=prompt),
        Case(
            RETRY_AFTER_DEATH,
            prompt=prompt,
            options={"retryFailedLanes": True},
            extra={"forgetLaneFailures": True},
        ),
    ]
