"""Replay a workflow's jobs on this machine the way GitHub's runners would run them.

    python -m tests.workflows.replay .github/workflows/release.yml --work DIR \
        [--secret NAME=FILE ...] [--var NAME=FILE ...] [--ref refs/heads/main]

The YAML is what runs: jobs in `needs` order, each matrix entry (from the plan job's real
output) as its own job, each job in its own clean clone (`git clone` of the commit, like
actions/checkout) with its own HOME, RUNNER_TEMP and $GITHUB_OUTPUT, every `run:` step with
the workflow's, job's and step's `env:` (expressions evaluated) under
`bash --noprofile --norc -eo pipefail`, as the runner does. What is emulated, and how:

- `container:` — ignored: this machine is the Debian bookworm the image is, as root;
- actions/checkout — a clone of the commit (no credentials); another `ref:` cannot be replayed;
- actions/upload-artifact / download-artifact — a copy through `WORK/artifacts/<name>/`,
  hidden files left out and modes reset to 0644/0755, as the real actions do (they keep no
  file modes); `pattern:` downloads each artifact into `path/<name>/`;
- actions/setup-python — this machine's python3 as `python` first on PATH;
- `runs-on` other than ubuntu-24.04 — the job runs here with $TINYRUSTLM_SMOKE_EMULATOR set
  from `EMULATORS` (qemu for arm64, wine for Windows) and is reported as emulated;
- secrets and vars — from files given on the command line; `github.*` — a workflow_dispatch
  of `--ref` at HEAD of the source repository;
- pip downloads share one cache folder (`WORK/pip-cache`), like a runner's cache action would.

Steps that need GitHub itself (deploy-pages, upload-pages-artifact, a release) are not
replayable: a job reaching one stops there and is reported. Jobs whose `if:` is false are
skipped as on GitHub.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
HOST_RUNNER = "ubuntu-24.04"
# runner label -> the emulator prefix the native smoke uses here instead of that hardware
EMULATORS: dict[str, str] = {
    "ubuntu-24.04-arm": "/usr/bin/qemu-aarch64-static -L /usr/aarch64-linux-gnu",
    "windows-2025": "/usr/lib/wine/wine64",
}
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
REPOSITORY = "OWNER/tinyrustlm-release"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class ReplayError(Exception):
    """The workflow asks for something this replay cannot do faithfully."""


class NotReplayable(ReplayError):
    """A step that needs GitHub itself."""


# --- expressions ---------------------------------------------------------------------------


def _split_args(text: str) -> list[str]:
    parts, depth, quote, current = [], 0, False, ""
    for ch in text:
        if ch == "'" and depth >= 0:
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
        if ch == "," and depth == 0 and not quote:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def evaluate(expr: str, ctx: Mapping[str, Any]) -> Any:
    """The expression subset the project's workflows use; anything else is a ReplayError."""
    expr = expr.strip()
    for op in (" != ", " == "):
        if op in expr:
            left, right = expr.split(op, 1)
            same = evaluate(left, ctx) == evaluate(right, ctx)
            return not same if op == " != " else same
    call = re.fullmatch(r"(\w+)\((.*)\)", expr, re.S)
    if call:
        name, args = call.group(1), [evaluate(a, ctx) for a in _split_args(call.group(2))]
        if name == "fromJSON":
            return json.loads(args[0])
        if name == "startsWith":
            return str(args[0]).lower().startswith(str(args[1]).lower())
        if name in ("success", "always"):
            return True
        if name in ("failure", "cancelled"):
            return False
        raise ReplayError(f"expression function {name}() is not replayed")
    if expr.startswith("'") and expr.endswith("'"):
        return expr[1:-1].replace("''", "'")
    if expr in ("true", "false"):
        return expr == "true"
    value: Any = ctx
    for part in expr.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise ReplayError(f"unknown expression context {expr!r}")
        value = value[part]
    return value


def substitute(value: Any, ctx: Mapping[str, Any]) -> Any:
    """`${{ }}` in a string (a lone expression keeps its type), recursively in containers."""
    if isinstance(value, dict):
        return {k: substitute(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, ctx) for v in value]
    if not isinstance(value, str):
        return value
    lone = EXPR.fullmatch(value.strip())
    if lone:
        return evaluate(lone.group(1), ctx)

    def text(match: re.Match[str]) -> str:
        found = evaluate(match.group(1), ctx)
        return json.dumps(found) if isinstance(found, dict | list) else str(found)

    return EXPR.sub(text, value)


def condition(job_or_step: Mapping[str, Any], ctx: Mapping[str, Any]) -> bool:
    raw = job_or_step.get("if")
    if raw is None:
        return True
    text = str(raw).strip()
    lone = EXPR.fullmatch(text)
    return bool(evaluate(lone.group(1) if lone else text, ctx))


# --- the replay ----------------------------------------------------------------------------


@dataclass
class JobResult:
    name: str
    status: str  # passed, failed, skipped, stopped
    seconds: float
    note: str = ""


@dataclass
class Replay:
    workflow: Path
    work: Path
    source: Path = REPO_ROOT
    secrets: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    ref: str = "refs/heads/main"
    results: list[JobResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.doc: dict[Any, Any] = yaml.safe_load(self.workflow.read_text(encoding="utf-8"))
        self.commit = subprocess.run(
            ["git", "-C", str(self.source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        self.artifacts = self.work / "artifacts"
        self.outputs: dict[str, dict[str, str]] = {}
        self.failed: set[str] = set()
        self.skipped: set[str] = set()

    def github(self) -> dict[str, str]:
        return {
            "ref": self.ref,
            "ref_name": self.ref.rsplit("/", 1)[-1],
            "ref_type": self.ref_type,
            "sha": self.commit,
            "repository": REPOSITORY,
            "event_name": "push" if self.ref_type == "tag" else "workflow_dispatch",
            "token": "replay-has-no-token",
        }

    @property
    def ref_type(self) -> str:
        return "tag" if self.ref.startswith("refs/tags/") else "branch"

    def order(self) -> Iterator[str]:
        jobs: dict[str, Any] = self.doc["jobs"]
        done: list[str] = []
        while len(done) < len(jobs):
            ready = [
                j
                for j, spec in jobs.items()
                if j not in done and all(n in done for n in _needs(spec))
            ]
            if not ready:
                raise ReplayError("the jobs' `needs` form a cycle")
            for job in ready:
                done.append(job)
                yield job

    def run(self) -> list[JobResult]:
        self.work.mkdir(parents=True, exist_ok=True)
        for job_id in self.order():
            self.run_job(job_id)
        return self.results

    def run_job(self, job_id: str) -> None:
        spec = self.doc["jobs"][job_id]
        needs = {n: {"outputs": self.outputs.get(n, {})} for n in _needs(spec)}
        ctx: dict[str, Any] = {
            "github": self.github(),
            "needs": needs,
            "secrets": self.secrets,
            "vars": self.variables,
            "inputs": {},
        }
        # As on GitHub: a job whose need failed or was skipped is skipped (no `always()` here).
        if any(n in self.failed | self.skipped for n in _needs(spec)) or not condition(spec, ctx):
            self.skipped.add(job_id)
            self.results.append(JobResult(job_id, "skipped", 0.0, "if: false or a need not run"))
            return
        matrix = substitute((spec.get("strategy") or {}).get("matrix"), ctx)
        entries = _expand(matrix) if matrix else [{}]
        outputs: dict[str, str] = {}
        for entry in entries:
            name = job_id + "".join(f" {v}" for k, v in entry.items() if k == "lane")
            outputs.update(self.run_instance(job_id, name, spec, {**ctx, "matrix": entry}))
        self.outputs[job_id] = outputs

    def run_instance(
        self, job_id: str, name: str, spec: Mapping[str, Any], ctx: dict[str, Any]
    ) -> dict[str, str]:
        started = time.monotonic()
        root = self.work / "jobs" / name.replace(" ", "-")
        if root.exists():
            shutil.rmtree(root)
        workspace, home, temp = root / "workspace", root / "home", root / "tmp"
        for folder in (workspace, home, temp, root / "bin"):
            folder.mkdir(parents=True)
        runner = str(substitute(spec.get("runs-on"), ctx))
        base = {
            "PATH": BASE_PATH,
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_REF": self.ref,
            "GITHUB_REF_NAME": self.ref.rsplit("/", 1)[-1],
            "GITHUB_REF_TYPE": self.ref_type,
            "GITHUB_SHA": self.commit,
            "RUNNER_TEMP": str(temp),
            "PIP_CACHE_DIR": str(self.work / "pip-cache"),
        }
        note = ""
        if runner != HOST_RUNNER:
            if runner not in EMULATORS:
                raise ReplayError(f"{name}: no emulation of runner {runner}")
            base["TINYRUSTLM_SMOKE_EMULATOR"] = EMULATORS[runner]
            note = f"runs-on {runner}: emulated by {EMULATORS[runner].split()[0]}"
        ctx["env"] = {}
        ctx["steps"] = {}
        job_env = {**_str_env(substitute(self.doc.get("env") or {}, ctx))}
        job_env.update(_str_env(substitute(spec.get("env") or {}, ctx)))
        status = "passed"
        log = root / "log.txt"
        for index, step in enumerate(spec.get("steps", [])):
            ctx["env"] = job_env
            if not condition(step, ctx):
                continue
            try:
                outputs = self.step(step, index, ctx, base, job_env, root, log)
            except NotReplayable as exc:
                status, note = "stopped", f"{note}; stopped at step {index}: {exc}".lstrip("; ")
                break
            except subprocess.CalledProcessError as exc:
                status = "failed"
                note = f"{note}; step {index} exit {exc.returncode} (log {log})".lstrip("; ")
                self.failed.add(job_id)
                break
            if "id" in step:
                ctx["steps"][step["id"]] = {"outputs": outputs}
        job_outputs = _str_env(substitute(spec.get("outputs") or {}, ctx))
        self.results.append(JobResult(name, status, time.monotonic() - started, note))
        print(f"replay: {name}: {status} in {time.monotonic() - started:.0f}s {note}", flush=True)
        if status == "failed":
            raise ReplayError(f"job {name} failed; see {log}")
        return job_outputs

    def step(
        self,
        step: Mapping[str, Any],
        index: int,
        ctx: dict[str, Any],
        base: dict[str, str],
        job_env: dict[str, str],
        root: Path,
        log: Path,
    ) -> dict[str, str]:
        workspace = Path(base["GITHUB_WORKSPACE"])
        with_ = substitute(step.get("with") or {}, ctx)
        uses = str(step.get("uses", ""))
        action = uses.split("@", 1)[0]
        if action == "actions/checkout":
            if with_.get("ref") or with_.get("repository"):
                raise NotReplayable(f"checkout of ref {with_.get('ref')!r}")
            target = workspace / str(with_.get("path", ""))
            if target.exists() and target != workspace:
                raise ReplayError(f"checkout path {target} exists")
            if target == workspace:
                target.rmdir()
            subprocess.run(
                ["git", "clone", "--quiet", "--no-hardlinks", str(self.source), str(target)],
                check=True,
            )
            subprocess.run(
                ["git", "-C", str(target), "checkout", "--quiet", "--detach", self.commit],
                check=True,
            )
            return {}
        if action == "actions/upload-artifact":
            self.upload(str(with_["name"]), workspace, str(with_["path"]), with_)
            return {}
        if action == "actions/download-artifact":
            self.download(workspace / str(with_.get("path", ".")), with_)
            return {}
        if action == "actions/setup-python":
            shim = root / "bin" / "python"
            shim.unlink(missing_ok=True)
            shim.symlink_to(shutil.which("python3") or "/usr/bin/python3")
            base["PATH"] = f"{root / 'bin'}:{base['PATH']}"
            return {"python-path": str(shim)}
        if uses:
            raise NotReplayable(uses)
        outputs = root / f"output.{index}"
        outputs.touch()
        env = {**base, **job_env, **_str_env(substitute(step.get("env") or {}, ctx))}
        env["GITHUB_OUTPUT"] = str(outputs)
        script = root / f"step.{index}.sh"
        script.write_text(str(step["run"]), encoding="utf-8")
        cwd = workspace / str(step.get("working-directory", ""))
        with log.open("a", encoding="utf-8") as out:
            out.write(f"\n=== step {index}: {step.get('name', step['run'])}\n")
            out.flush()
            subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=cwd,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=True,
            )
        return _read_outputs(outputs)

    def upload(self, name: str, workspace: Path, path: str, with_: Mapping[str, Any]) -> None:
        source = workspace / path
        target = self.artifacts / name
        if target.exists():
            raise ReplayError(f"artifact {name} uploaded twice")
        if not source.is_dir():
            if with_.get("if-no-files-found") == "error":
                raise subprocess.CalledProcessError(1, f"upload-artifact {name}: no files")
            return
        _copy_like_artifact(source, target)

    def download(self, destination: Path, with_: Mapping[str, Any]) -> None:
        if "name" in with_:
            source = self.artifacts / str(with_["name"])
            if not source.is_dir():
                raise subprocess.CalledProcessError(1, f"download-artifact: no {with_['name']}")
            _copy_like_artifact(source, destination)
            return
        pattern = str(with_["pattern"])
        for artifact in sorted(self.artifacts.iterdir()):
            if fnmatch.fnmatch(artifact.name, pattern):
                _copy_like_artifact(artifact, destination / artifact.name)


def _needs(spec: Mapping[str, Any]) -> list[str]:
    needs = spec.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def _expand(matrix: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [{}]
    for key, values in matrix.items():
        if key in ("include", "exclude"):
            continue
        entries = [{**e, key: v} for e in entries for v in values]
    includes = list(matrix.get("include", []))
    if entries == [{}] and includes:
        return [dict(i) for i in includes]
    return entries


def _str_env(values: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): "" if v is None else str(v) for k, v in values.items()}


def _read_outputs(path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    lines = iter(path.read_text(encoding="utf-8").splitlines())
    for line in lines:
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            key, marker = line.split("<<", 1)
            value = []
            for inner in lines:
                if inner == marker:
                    break
                value.append(inner)
            found[key] = "\n".join(value)
        elif "=" in line:
            key, value_text = line.split("=", 1)
            found[key] = value_text
    return found


def _copy_like_artifact(source: Path, target: Path) -> None:
    """Copy a folder the way an artifact round trip does: no hidden files, modes 0644/0755."""
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if any(part.startswith(".") for part in rel.parts):
            continue
        out = target / rel
        if path.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            out.chmod(0o755)
        elif path.is_file() and stat.S_ISREG(path.stat().st_mode):
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
            out.chmod(0o644)
    target.mkdir(parents=True, exist_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.workflows.replay")
    parser.add_argument("workflow", type=Path)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--secret", action="append", default=[], metavar="NAME=FILE")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=FILE")
    parser.add_argument("--ref", default="refs/heads/main")
    args = parser.parse_args(argv)

    def files(pairs: list[str]) -> dict[str, str]:
        return {k: Path(v).read_text(encoding="utf-8") for k, v in (p.split("=", 1) for p in pairs)}

    replay = Replay(
        args.workflow.resolve(),
        args.work.resolve(),
        secrets=files(args.secret),
        variables=files(args.var),
        ref=args.ref,
    )
    started = time.monotonic()
    try:
        results = replay.run()
    except ReplayError as exc:
        print(f"replay: error: {exc}", file=sys.stderr)
        return 1
    for r in results:
        print(f"{r.status:8} {r.seconds:7.0f}s  {r.name}  {r.note}")
    print(f"replay of {args.workflow.name}: {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
