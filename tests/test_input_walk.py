"""Every file a CLI takes is read bounded (issue 36, "Every read bounded").

The walk lists every option of every command of both CLIs that takes a path, from the real
parsers (`type=Path`), so a new file option is walked without anyone adding it here; output
paths are excluded by name, each with its reason (`OUTPUTS`). Each walked option gets a command
line that is otherwise valid (`BASE`: a real fake-released bundle, a TUF repository, keys),
then each hostile input in its place (`HOSTILE`): /dev/zero, a FIFO with no writer, a sparse
10 GB file, a folder, a link to /dev/zero, a link to a regular file that is no input of any
kind. Folders the commands read files from are walked inside too (`INNER`): the bundle's
manifest and an artifact, a TUF repository's metadata and pending release, fetch's cached
metadata, build records.

Every run must end with a typed error id in --json (or succeed, only where a folder is
expected and a folder was given), exit non-zero, print no traceback, finish within
`TIMEOUT` s and stay under `MAX_RSS_MIB`. The runs are forked from one zygote that has both
CLIs imported (`tests/harness/forkrun.py`), two at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pipeline import cli as release_cli
from pipeline.documents.keys import generate_key_files
from pipeline.publish.keys import KeyFolders
from pipeline.publish.repo import init_repository
from pipeline.tuf.policy import load_policy
from tests.harness.release import released
from verify import cli as verify_cli
from verify.shell.commands import Shell, leaf_parsers

REPO = Path(__file__).resolve().parents[1]
SHELLS: dict[str, Shell] = {"release": release_cli.SHELL, "verify": verify_cli.SHELL}
TIMEOUT = 20.0
MAX_RSS_MIB = 256
TEN_GB = 10 * 1000**3

# (command, option) -> why it is not walked: a path the command writes, never reads
OUTPUTS: dict[tuple[str, str], str] = {
    ("release toolchain", "folder"): "`toolchain export`'s target folder: written",
    ("release pack-model", "--out"): "the model file written",
    ("release build", "--records-out"): "the records folder written",
    ("release smoke-plan", "--out"): "the plan folder written",
    ("release golden", "--out"): "the golden files written",
    ("release keygen", "--out"): "the key folder written",
    ("release trust-policy", "--out"): "the policy file written",
    ("release release", "--dist"): "the dist folder written",
    ("release reproduce", "--workdir"): "a scratch folder the rebuild is made in",
    ("release reproduce", "--diff-dir"): "the differing files written",
    ("release reproduce", "--attest-out"): "the attestation written",
    ("release schemas", "--out"): "the schema folder written",
    ("release fetch", "--out"): "the fetched bundle's folder written",
    ("release conformance", "--out"): "the report written",
    ("release conformance", "--html"): "the HTML report written",
    ("verify report", "--out"): "the report page written",
}

# A command line for each command with path options, valid except for what is walked; `{x}`
# are the ground's paths (`Ground.values`). Mutable folders are copied per run.
BASE: dict[str, str] = {
    "release toolchain": "toolchain check --lock {src}/toolchain.lock",
    "release build": "build --repo {src} --lane scalar-wasm32",
    "release lanes": "lanes --repo {src}",
    "release smoke-plan": "smoke-plan --lane scalar-wasm32 --records {records} --out {run}/plan "
    "--repo {src}",
    "release golden": "golden --repo {src} --out {run}/golden",
    "release trust-policy": "trust-policy --keys {trusted} --threshold 1 --out {run}/policy.json",
    "release release": "release --key {key} --dist {run}/dist --no-conformance",
    "release bench": "bench --compare {junk}",
    "release sign": "sign {bundle} --trusted-keys {trusted} --key {key}",
    "release reproduce": "reproduce {bundle} --trusted-keys {trusted} --attest --key {key} "
    "--source {src} --workdir {run}/work",
    "release repo init": "repo init --repo {run}/new-repo --keys {run}/new-keys",
    "release repo refresh-timestamp": "repo refresh-timestamp --repo {tuf} --keys {tufkeys}",
    "release repo rotate-root": "repo rotate-root --repo {tuf} --keys {tufkeys}",
    "release repo rotate": "repo rotate releases --repo {tuf} --keys {tufkeys} "
    "--maintainer {maintainer_pub} --threshold 1 --current-maintainer-key {maintainer_key}",
    "release repo delegate": "repo delegate --repo {tuf} --keys {tufkeys} "
    "--maintainer {maintainer_pub} --threshold 1",
    "release repo sign-pending": "repo sign-pending --repo {tuf} --keys {tufkeys} "
    "--maintainer-key {maintainer_key} --trusted-keys {trusted}",
    "release publish": "publish {bundle} --repo {tuf} --keys {tufkeys} --trusted-keys {trusted}",
    "release fetch": "fetch {url} --root {tuf}/metadata/1.root.json --latest --out {run}/out "
    "--trusted-keys {trusted} --state {run}/state",
    "release serve": "serve {bundle} --trusted-keys {trusted} --port 0",
    "release conformance": "conformance {bundle} --trusted-keys {trusted} --engines node "
    "--cases 1 --out {run}/c.json",
    "verify artifact": "artifact {wasm} --lane scalar-wasm32 --build-index {records}/index.json",
    "verify bundle": "bundle {bundle} --trusted-keys {trusted}",
    "verify report": "report {bundle} --trusted-keys {trusted} --out {run}/r.html",
}
CWD: dict[str, str] = {"release release": "{src}"}  # release builds the current folder
# an option only one action of its command reads: that action's command line
BASE_FOR: dict[tuple[str, str], str] = {
    ("release toolchain", "--seed"): "toolchain lock --lock {run}/toolchain.lock",
}

# Folders whose files the commands read: (command, option) -> files walked inside a copy.
BUNDLE_FILES = ("manifest.json", "artifacts/{artifact}")
REPO_FILES = ("metadata/1.root.json", "metadata/timestamp.json")
INNER: dict[tuple[str, str], tuple[str, ...]] = {
    ("release sign", "bundle"): BUNDLE_FILES,
    ("release publish", "bundle"): BUNDLE_FILES,
    ("release reproduce", "bundle"): BUNDLE_FILES,
    ("release serve", "bundle"): BUNDLE_FILES,
    ("release conformance", "bundle"): BUNDLE_FILES,
    ("verify bundle", "bundle"): BUNDLE_FILES,
    ("verify report", "bundle"): BUNDLE_FILES,
    ("release repo refresh-timestamp", "--repo"): REPO_FILES,
    ("release repo rotate", "--repo"): REPO_FILES,
    ("release repo delegate", "--repo"): REPO_FILES,
    ("release repo sign-pending", "--repo"): (*REPO_FILES, "pending/releases.json"),
    ("release publish", "--repo"): REPO_FILES,
    ("release repo delegate", "--keys"): ("snapshot/{snapshot_key}",),
    ("release fetch", "--state"): (
        "metadata/root.json",
        "metadata/timestamp.json",
        "metadata/releases.json",
        "fetch-state.json",
    ),
    ("release smoke-plan", "--records"): ("index.json",),
    ("release release", "--from-records"): ("index.json", "scalar-wasm32/build-record.json"),
}
# the folders (by placeholder) an INNER walk copies and changes
FOLDER_OF: dict[str, str] = {
    "bundle": "bundle",
    "--repo": "tuf",
    "--keys": "tufkeys",
    "--state": "state",
    "--records": "records",
    "--from-records": "records",
}


def _is_path(action: argparse.Action) -> bool:
    return action.type is Path


def _folder_expected(action: argparse.Action) -> bool:
    return action.metavar == "DIR" or action.dest in {"bundle", "repo", "policy_dir"}


@dataclass(frozen=True)
class PathOption:
    command: str  # "release repo delegate"
    option: str  # "--maintainer", or a positional's name ("bundle")
    folder: bool  # a folder is what it takes (a folder given is no error by itself)


def _leaves() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for cli, shell in SHELLS.items():
        for action in shell.parser()._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    for path, leaf in leaf_parsers(sub, name):
                        yield f"{cli} {path}", leaf


def path_options() -> list[PathOption]:
    found = []
    for command, leaf in _leaves():
        for action in leaf._actions:
            if not _is_path(action):
                continue
            option = action.option_strings[0] if action.option_strings else action.dest
            found.append(PathOption(command, option, _folder_expected(action)))
    return found


ALL_OPTIONS = path_options()
WALKED = [o for o in ALL_OPTIONS if (o.command, o.option) not in OUTPUTS]

HOSTILE = ("dev-zero", "fifo", "sparse-10g", "folder", "link-to-dev-zero", "link-to-file")


def make_hostile(kind: str, at: Path, junk: Path) -> None:
    """The hostile input `kind` at path `at` (its parent exists, `at` does not)."""
    if kind == "dev-zero":
        at.symlink_to("/dev/zero")  # /dev/zero itself for top-level options: see `_argv`
    elif kind == "fifo":
        os.mkfifo(at)
    elif kind == "sparse-10g":
        with at.open("wb") as f:
            f.truncate(TEN_GB)
    elif kind == "folder":
        at.mkdir()
    elif kind == "link-to-dev-zero":
        at.symlink_to("/dev/zero")
    else:
        at.symlink_to(junk)


@dataclass(frozen=True)
class Run:
    name: str
    cli: str
    argv: list[str]
    cwd: str
    folder_ok: bool  # a folder in a folder's place: success allowed


@dataclass
class Ground:
    root: Path
    values: dict[str, str]

    def copy_for(self, run_dir: Path, placeholder: str) -> str:
        target = run_dir / placeholder
        if not target.exists():
            shutil.copytree(self.values[placeholder], target, symlinks=True)
        return str(target)


MUTABLE = ("bundle", "tuf", "tufkeys", "records", "src")  # copied per run


def _values(template: str, ground: Ground, run_dir: Path) -> dict[str, str]:
    values = dict(ground.values, run=str(run_dir))
    for name in MUTABLE:
        if "{" + name + "}" in template:
            values[name] = ground.copy_for(run_dir, name)
    return values


def _fill(template: str, ground: Ground, run_dir: Path) -> list[str]:
    return template.format(**_values(template, ground, run_dir)).split()


def _cwd(command: str, ground: Ground, run_dir: Path) -> str:
    template = CWD.get(command, "{run}")
    return template.format(**_values(template, ground, run_dir))


def _substitute(argv: list[str], option: PathOption, value: str) -> list[str]:
    if not option.option.startswith("-"):  # a positional: the word after the command's name
        index = len(option.command.split()) - 1
        return [*argv[:index], value, *argv[index + 1 :]]
    if option.option in argv:
        index = argv.index(option.option) + 1
        return [*argv[:index], value, *argv[index + 1 :]]
    return [*argv, option.option, value]


def _top_level(kind: str, run_dir: Path, junk: Path) -> str:
    if kind == "dev-zero":
        return "/dev/zero"
    at = run_dir / "hostile"
    make_hostile(kind, at, junk)
    return str(at)


def build_runs(ground: Ground) -> list[Run]:
    runs: list[Run] = []
    junk = Path(ground.values["junk"])
    for n, option in enumerate(WALKED):
        cli = option.command.split()[0]
        template = BASE_FOR.get((option.command, option.option), BASE[option.command])
        for kind in HOSTILE:
            run_dir = ground.root / "runs" / f"{n}-{kind}"
            run_dir.mkdir(parents=True)
            argv = _substitute(
                _fill(template, ground, run_dir), option, _top_level(kind, run_dir, junk)
            )
            cwd = _cwd(option.command, ground, run_dir)
            name = f"{option.command} {option.option} <- {kind}"
            runs.append(Run(name, cli, argv, cwd, option.folder))
        for rel_template in INNER.get((option.command, option.option), ()):
            rel = rel_template.format(**ground.values)
            for kind in HOSTILE:
                run_dir = ground.root / "runs" / f"{n}-{rel.replace('/', '_')}-{kind}"
                run_dir.mkdir(parents=True)
                folder = Path(ground.copy_for(run_dir, FOLDER_OF[option.option]))
                inside = folder / rel
                inside.parent.mkdir(parents=True, exist_ok=True)
                if inside.exists() or inside.is_symlink():
                    inside.unlink()
                make_hostile(kind, inside, junk)
                argv = _substitute(_fill(template, ground, run_dir), option, str(folder))
                cwd = _cwd(option.command, ground, run_dir)
                name = f"{option.command} {option.option}/{rel} <- {kind}"
                runs.append(Run(name, cli, argv, cwd, False))
    return runs


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    timed_out: bool
    max_rss_mib: float
    stdout: str
    stderr: str


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def ground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ground]:
    root = tmp_path_factory.mktemp("walk")
    harness, bundle = released(root / "release")
    tuf, tufkeys = root / "tuf", root / "tuf-keys"
    init_repository(tuf, KeyFolders(tufkeys), load_policy(), "development", now=datetime.now(UTC))
    maintainer = generate_key_files(root / "maintainer", "alice", "release")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(tuf)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    records = root / "records"
    shutil.copytree(harness.repo / "build", root / "build-copy")
    records.mkdir()
    shutil.copy(root / "build-copy/index.json", records / "index.json")
    (records / "scalar-wasm32").mkdir()
    junk = root / "junk.txt"
    junk.write_bytes(b"not an input of any kind\n")
    artifact = sorted((bundle / "artifacts").iterdir())[0].name
    snapshot_key = sorted((tufkeys / "snapshot").iterdir())[0].name
    (root / "state").mkdir()
    values = {
        "src": str(harness.repo),
        "bundle": str(bundle),
        "trusted": str(harness.key.trusted_keys),
        "key": str(harness.key.private_pem),
        "tuf": str(tuf),
        "tufkeys": str(tufkeys),
        "maintainer_pub": str(maintainer.public_pem),
        "maintainer_key": str(maintainer.private_pem),
        "url": f"http://127.0.0.1:{server.server_address[1]}",
        "records": str(records),
        "wasm": str(bundle / "artifacts" / artifact),
        "junk": str(junk),
        "artifact": artifact,
        "snapshot_key": snapshot_key,
        "state": str(root / "state"),
    }
    try:
        yield Ground(root, values)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def outcomes(ground: Ground) -> dict[str, tuple[Run, Outcome]]:
    runs = build_runs(ground)
    cases: list[dict[str, Any]] = []
    for i, run in enumerate(runs):
        cases.append(
            {
                "name": run.name,
                "cli": run.cli,
                "argv": [*run.argv, "--json"],
                "cwd": run.cwd,
                "out": str(ground.root / f"out-{i}.txt"),
                "err": str(ground.root / f"err-{i}.txt"),
            }
        )
    case_file, result_file = ground.root / "cases.json", ground.root / "results.json"
    case_file.write_text(json.dumps(cases), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    zygote = ["-m", "tests.harness.forkrun", str(case_file), str(result_file)]
    options = ["--parallel", "2", "--timeout", str(TIMEOUT)]
    subprocess.run([sys.executable, *zygote, *options], cwd=REPO, env=env, check=True)
    results = json.loads(result_file.read_text(encoding="utf-8"))
    found: dict[str, tuple[Run, Outcome]] = {}
    for run, case, result in zip(runs, cases, results, strict=True):
        found[run.name] = (
            run,
            Outcome(
                result["exit_code"],
                result["timed_out"],
                result["max_rss_kib"] / 1024,
                Path(case["out"]).read_text(encoding="utf-8", errors="replace"),
                Path(case["err"]).read_text(encoding="utf-8", errors="replace"),
            ),
        )
    return found


def test_the_walk_finds_every_path_option() -> None:
    found = {(o.command, o.option) for o in ALL_OPTIONS}
    assert {("release repo delegate", "--maintainer"), ("verify bundle", "bundle")} <= found
    assert set(OUTPUTS) <= found, sorted(set(OUTPUTS) - found)  # no stale exclusion
    assert {o.command for o in WALKED} <= set(BASE)
    assert {key for key in INNER} <= {(o.command, o.option) for o in WALKED}


def problems(run: Run, outcome: Outcome) -> list[str]:
    wrong = []
    if outcome.timed_out:
        wrong.append(f"hung: killed after {TIMEOUT} s")
    if "Traceback" in outcome.stderr:
        wrong.append("a traceback on stderr")
    if outcome.max_rss_mib > MAX_RSS_MIB:
        wrong.append(f"peak memory {outcome.max_rss_mib:.0f} MiB")
    succeeded = outcome.exit_code == 0
    if succeeded and not (run.folder_ok and run.name.endswith("<- folder")):
        wrong.append("exit 0 on a hostile input")
    if not succeeded and not outcome.timed_out:
        try:
            doc = json.loads(outcome.stdout)
            error_id = doc["error"]["id"]
        except (ValueError, KeyError, TypeError):
            error_id = None
        if not error_id or error_id == "verify.error":
            wrong.append(f"no typed error id in --json: {outcome.stdout[:200]!r}")
    return wrong


def test_every_file_option_refuses_hostile_input(
    outcomes: dict[str, tuple[Run, Outcome]],
) -> None:
    failures = {
        name: (problems(run, outcome), outcome.stderr[-600:])
        for name, (run, outcome) in outcomes.items()
        if problems(run, outcome)
    }
    top = sum(1 for name in outcomes if "/" not in name.split(" <- ")[0].split()[-1])
    inside = len(outcomes) - top
    print(f"walked {len(WALKED)} options x {len(HOSTILE)} inputs = {top} runs; {inside} inside")
    assert not failures, json.dumps(failures, indent=1)
