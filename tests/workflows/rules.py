"""What supply-chain reviewers check in a GitHub Actions workflow, as one checker.

`violations(text, name)` returns one `rule-id: where` string per breach of these rules:

- `uses.unpinned`: every `uses:` names a full 40-hex commit SHA, followed by a version comment;
- `permissions.top-level`: the workflow's top-level `permissions` is `{}` or read-only;
- `permissions.job-missing`: every job states its own `permissions`;
- `permissions.write`: a job may write only the scopes `WRITE_ALLOWED` grants it
  (`contents: write`, `id-token: write`, ... nowhere else);
- `trigger.pull-request-target`: no `pull_request_target` trigger;
- `run.expression`: no `${{ ... }}` inside a `run:` script (values come through `env:`);
- `checkout.credentials`: every actions/checkout step sets `persist-credentials: false`;
- `secrets.in-build-job`: a job that builds (runs `build` or cargo) reads no secret and
  writes nothing: signing never happens where untrusted build code ran.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

SHA_PIN = re.compile(r"^\s*(?:-\s*)?uses:\s*([^@\s]+)@([0-9a-f]{40})\s+#\s*v\d[\w.]*\s*$")
EXPRESSION = re.compile(r"\$\{\{")
BUILD_STEP = re.compile(r"tinyrustlm-release\s+build\b|\bcargo\s")
SECRETS = re.compile(r"\$\{\{\s*secrets\.")
READ_ONLY = {"read", "none"}
# (workflow file, job) -> the scopes it may write, and why (least privilege)
WRITE_ALLOWED: dict[tuple[str, str], frozenset[str]] = {
    ("release.yml", "github-release"): frozenset({"contents"}),  # creates the GitHub release
    ("release.yml", "publish"): frozenset({"contents"}),  # pushes the TUF repository branch
    ("release.yml", "pages"): frozenset({"pages", "id-token"}),  # deploy-pages
}


def _triggers(doc: dict[Any, Any]) -> Any:
    # YAML 1.1 reads the bare key `on` as the boolean true.
    return doc.get("on", doc.get(True))


def _writes(permissions: Any) -> set[str]:
    if permissions in ({}, None, "read-all"):
        return set()
    if isinstance(permissions, str):  # "write-all"
        return {"*"}
    return {scope for scope, level in permissions.items() if level not in READ_ONLY}


def _steps(doc: dict[Any, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(where, step) for every step of every job, or of a composite action."""
    found: list[tuple[str, dict[str, Any]]] = []
    for job_id, job in (doc.get("jobs") or {}).items():
        found += [(f"jobs.{job_id}.steps[{i}]", s) for i, s in enumerate(job.get("steps", []))]
    runs = doc.get("runs") or {}
    found += [(f"runs.steps[{i}]", s) for i, s in enumerate(runs.get("steps", []))]
    return found


def violations(text: str, name: str) -> list[str]:
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*(?:-\s*)?uses:", line) and not SHA_PIN.match(line):
            found.append(f"uses.unpinned: line {number}: {line.strip()}")
    doc: dict[Any, Any] = yaml.safe_load(text)
    triggers = _triggers(doc)
    names = [triggers] if isinstance(triggers, str) else list(triggers or [])
    if "pull_request_target" in names:
        found.append("trigger.pull-request-target: on")
    is_workflow = "jobs" in doc
    if is_workflow and ("permissions" not in doc or _writes(doc["permissions"])):
        found.append(f"permissions.top-level: {doc.get('permissions')!r}")
    for job_id, job in (doc.get("jobs") or {}).items():
        if "permissions" not in job:
            found.append(f"permissions.job-missing: jobs.{job_id}")
            continue
        extra = _writes(job["permissions"]) - WRITE_ALLOWED.get((name, job_id), frozenset())
        if extra:
            found.append(f"permissions.write: jobs.{job_id}: {sorted(extra)}")
        job_text = yaml.safe_dump(job)
        runs = " ".join(str(s.get("run", "")) for s in job.get("steps", []))
        if BUILD_STEP.search(runs) and (SECRETS.search(job_text) or _writes(job["permissions"])):
            found.append(f"secrets.in-build-job: jobs.{job_id}")
    for where, step in _steps(doc):
        if EXPRESSION.search(str(step.get("run", ""))):
            found.append(f"run.expression: {where}")
        checkout = str(step.get("uses", "")).startswith("actions/checkout@")
        if checkout and (step.get("with") or {}).get("persist-credentials") is not False:
            found.append(f"checkout.credentials: {where}")
    return found
