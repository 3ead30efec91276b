"""The shell both CLIs share (`verify/shell/`): every command of `tinyrustlm-release` and
`tinyrustlm-verify` takes --json, --quiet and --verbose; --json prints exactly one JSON object
on stdout (the command's result, or its error with the id); colour, progress bars and
completion only where they belong (README, "Command-line output").

The walk below lists every runnable command from the real parsers; `JSON_CASES` must hold one
case for each, so a new command without a --json case fails here.
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pipeline import cli as release_cli
from verify import cli as verify_cli
from verify.formats.cli_result import CLI_RESULT_SCHEMA, CliResult
from verify.shell import progress, terminal
from verify.shell.arguments import OUTPUT_FLAGS
from verify.shell.commands import Shell, leaf_parsers

REPO = Path(__file__).resolve().parents[1]
SHELLS: dict[str, Shell] = {"release": release_cli.SHELL, "verify": verify_cli.SHELL}


def _leaves(shell: Shell) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    top = shell.parser()
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from leaf_parsers(sub, name)


LEAVES = [(f"{cli} {path}", leaf) for cli, shell in SHELLS.items() for path, leaf in _leaves(shell)]


@pytest.mark.parametrize(("command", "leaf"), LEAVES, ids=[c for c, _ in LEAVES])
def test_every_command_takes_the_output_flags(command: str, leaf: argparse.ArgumentParser) -> None:
    options = set(leaf._option_string_actions)
    assert set(OUTPUT_FLAGS) | {"-q", "-v"} <= options, command


def test_the_walk_finds_every_command() -> None:
    found = {c for c, _ in LEAVES}
    assert {"release repo init", "release repo sign-pending", "release build"} <= found
    assert {"verify artifact", "verify bundle"} <= found
    assert len(found) == len(release_cli.COMMANDS) - 1 + 6 + len(verify_cli.COMMANDS)


def test_quiet_and_verbose_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        release_cli.main(["schemas", "-q", "-v"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@dataclass(frozen=True)
class Case:
    """One command line per command (`{tmp}` is a fresh folder), and what --json must say:
    an error id, or the keys of the command's result (or of its own document)."""

    argv: list[str]
    exit_code: int
    error_id: str | None = None
    keys: frozenset[str] = frozenset()
    schema: str = CLI_RESULT_SCHEMA  # a command with a document of its own names its schema


def _case(
    argv: str,
    exit_code: int,
    error_id: str | None = None,
    keys: str = "",
    schema: str = CLI_RESULT_SCHEMA,
) -> Case:
    return Case(argv.split(), exit_code, error_id, frozenset(keys.split()), schema)


N = "{tmp}/none"  # a path that does not exist
JSON_CASES: dict[str, Case] = {
    "release toolchain": _case("toolchain export", 2, "toolchain.usage"),
    "release pack-model": _case(
        "pack-model --preset tiny --out {tmp}/m.trlm", 0, keys="out preset seed bytes sha256"
    ),
    "release build": _case("build --lane nope", 3, "lanes.invalid"),
    "release lanes": _case(f"lanes --repo {REPO}", 0, keys="build smoke"),
    "release smoke-plan": _case(
        f"smoke-plan --lane x --records {N} --out {{tmp}}", 3, "lanes.invalid"
    ),
    "release golden": _case(f"golden --repo {N}", 3, "toolchain.lock-invalid"),
    "release keygen": _case(
        "keygen --out {tmp}/keys --name k", 0, keys="keyid private_key public_key trusted_keys"
    ),
    "release trust-policy": _case(
        f"trust-policy --keys {N} --threshold 1 --out {{tmp}}/p", 3, "trust-policy.invalid"
    ),
    "release release": _case("release --conformance-require bogus", 2, "conformance.usage"),
    "release bench": _case(f"bench --compare {N}", 3, "input.unreadable"),
    "release sign": _case(f"sign {N} --trusted-keys {N}", 3, "sign.not-a-bundle"),
    "release reproduce": _case(
        f"reproduce {N} --trusted-keys {N} --attest", 3, "reproduce.attest-key"
    ),
    "release schemas": _case("schemas --out {tmp}/schemas", 0, keys="written"),
    "release repo init": _case(
        "repo init --repo {tmp}/r --keys {tmp}/k --expiry bogus", 3, "repo.policy-invalid"
    ),
    "release repo refresh-timestamp": _case(
        f"repo refresh-timestamp --repo {N} --keys {N}", 3, "repo.missing"
    ),
    "release repo rotate-root": _case(f"repo rotate-root --repo {N} --keys {N}", 3, "repo.missing"),
    "release repo rotate": _case(f"repo rotate targets --repo {N} --keys {N}", 3, "repo.missing"),
    "release repo delegate": _case(
        f"repo delegate --repo {N} --keys {N} --maintainer {N} --threshold 1",
        3,
        "input.unreadable",
    ),
    "release repo sign-pending": _case(
        f"repo sign-pending --repo {N} --keys {N} --maintainer-key {N} --trusted-keys {N}",
        3,
        "fetch.trusted-keys-invalid",
    ),
    "release publish": _case(
        f"publish {N} --repo {N} --keys {N} --trusted-keys {N}", 3, "fetch.trusted-keys-invalid"
    ),
    "release fetch": _case(
        f"fetch http://127.0.0.1:9 --root {N} --latest --out {{tmp}} --trusted-keys {N}",
        3,
        "fetch.root-invalid",
    ),
    "release serve": _case(f"serve {N}", 3, "serve.not-a-bundle"),
    "release conformance": _case(
        f"conformance {N} --out {{tmp}}/c.json --engines bogus", 2, "conformance.usage"
    ),
    "verify artifact": _case(
        f"artifact {N} --lane scalar-wasm32",
        3,
        "input.unreadable",
        schema="tinyrustlm.artifact-refusal.v1",
    ),
    "verify bundle": _case(
        f"bundle {N} --trusted-keys {N} --certificate-identity x",
        2,
        "bundle.usage",
        schema="tinyrustlm.bundle-verification.v1",
    ),
    "verify report": _case(
        f"report {N} --trusted-keys {N} --out {{tmp}}/r.html --certificate-identity x",
        2,
        "bundle.usage",
    ),
}


def test_every_command_has_a_json_case() -> None:
    assert set(JSON_CASES) == {c for c, _ in LEAVES}


def _run(command: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    main: Callable[[list[str]], int] = SHELLS[command.split()[0]].main
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", list(JSON_CASES), ids=list(JSON_CASES))
def test_json_prints_one_object_with_the_result_or_the_error_id(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = JSON_CASES[command]
    argv = [a.replace("{tmp}", str(tmp_path)) for a in case.argv]
    code, out, err = _run(command, [*argv, "--json"], capsys)
    doc: dict[str, Any] = json.loads(out)  # the whole of stdout: one object, nothing else
    assert code == case.exit_code, err
    assert doc["schema"] == case.schema
    if case.schema == CLI_RESULT_SCHEMA:
        parsed = CliResult.model_validate(doc)
        assert parsed.command == command.split(maxsplit=1)[1]
        assert parsed.ok == (code == 0) and parsed.exit_code == code
    if case.error_id is not None:
        assert doc["error"]["id"] == case.error_id and doc["error"]["message"]
        assert doc["ok"] is False
        assert err.startswith(f"error[{case.error_id}]: ")  # the diagnostics stay on stderr
    else:
        result = doc["result"] if case.schema == CLI_RESULT_SCHEMA else doc
        assert case.keys <= set(result), sorted(result)


def test_without_json_the_output_is_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(
        "release", ["pack-model", "--preset", "tiny", "--out", str(tmp_path / "m")], capsys
    )
    assert code == 0 and err == ""
    assert out.startswith(f"{tmp_path / 'm'}: preset=tiny seed=7 bytes=") and out.count("\n") == 1


def test_quiet_prints_nothing_but_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = ["keygen", "--out", str(tmp_path / "k"), "--name", "k"]
    assert _run("release", [*keys, "--quiet"], capsys) == (0, "", "")
    code, out, err = _run("release", [*keys, "-q"], capsys)  # the files exist now: refused
    assert code == 3 and out == "" and err.startswith("error[")
    code, out, _ = _run(
        "release", ["schemas", "--out", str(tmp_path / "s"), "-q", "--json"], capsys
    )
    assert code == 0 and json.loads(out)["result"]["written"]


def test_verbose_adds_the_traceback_and_the_exit_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(
        "release", ["pack-model", "--preset", "tiny", "--out", str(tmp_path), "--verbose"], capsys
    )
    assert code == 3
    assert err.startswith("error[modelpack.usage]: ")
    assert "Traceback (most recent call last)" in err
    assert err.splitlines()[-1].startswith("tinyrustlm-release pack-model: exit 3 in ")
    code, _, err = _run(
        "release", ["pack-model", "--preset", "tiny", "--out", str(tmp_path)], capsys
    )
    assert "Traceback" not in err and "exit 3 in" not in err


@pytest.mark.parametrize("with_json", [True, False], ids=["json", "plain"])
def test_a_refused_command_line_prints_as_argparse_does(
    with_json: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bundle", "--no-such-option", *(["--json"] if with_json else [])]
    with pytest.raises(SystemExit) as info:
        verify_cli.main(argv)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert err.startswith("usage: tinyrustlm-verify bundle ")
    assert "tinyrustlm-verify bundle: error: the following arguments are required" in err
    if with_json:
        doc = CliResult.model_validate_json(out)
        assert doc.error is not None and doc.error.id == "cli.usage" and doc.exit_code == 2
        assert doc.command is None
    else:
        assert out == ""


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def on_terminal(monkeypatch: pytest.MonkeyPatch) -> FakeTerminal:
    """stdout a colour terminal (set in the test itself: pytest re-installs its capture
    between a fixture's set-up and the test)."""
    fake = FakeTerminal()
    monkeypatch.setattr("sys.stdout", fake)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    return fake


def test_statuses_are_coloured() -> None:
    text = "  scalar-wasm32  pass  ok\n  simd128  fail\n"
    coloured = terminal.styled(text)
    assert "\x1b[32mpass" in coloured and "\x1b[1;31mfail" in coloured
    assert coloured.startswith("  scalar-wasm32  \x1b[32mpass")  # a lane name stays plain


@pytest.mark.parametrize(
    "setting",
    ["NO_COLOR", "TERM=dumb", "no rich", "not a terminal"],
)
def test_plain_without_a_colour_terminal(setting: str, monkeypatch: pytest.MonkeyPatch) -> None:
    terminal_stdout = on_terminal(monkeypatch)
    if setting == "NO_COLOR":
        monkeypatch.setenv("NO_COLOR", "1")
    elif setting == "TERM=dumb":
        monkeypatch.setenv("TERM", "dumb")
    elif setting == "no rich":
        monkeypatch.setattr(terminal, "HAVE_RICH", False)
    else:
        monkeypatch.setattr("sys.stdout", io.StringIO())
    import sys

    assert terminal.colour_wanted(sys.stdout) is False
    with terminal.command_streams(json=False, quiet=False):
        print("lane ok, other fail")
    if setting != "not a terminal":
        assert terminal_stdout.getvalue() == "lane ok, other fail\n"


def test_a_command_prints_in_colour_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    terminal_stdout = on_terminal(monkeypatch)
    keys = tmp_path / "k"
    assert (
        release_cli.main(["keygen", "--out", str(keys), "--name", "k", "--role", "development"])
        == 0
    )
    assert (
        release_cli.main(
            [
                "trust-policy",
                "--keys",
                str(keys / "k.trusted-keys.json"),
                "--threshold",
                "1",
                "--out",
                str(tmp_path / "p"),
            ]
        )
        == 0
    )
    assert "keyid        " in terminal_stdout.getvalue()  # the commands' own lines reach it
    with terminal.command_streams(json=False, quiet=False):
        print("verified: ok")
    assert terminal_stdout.getvalue().endswith(terminal.styled("verified: ok\n"))
    assert "\x1b[32mverified" in terminal_stdout.getvalue()


def test_diagnostics_in_colour_on_a_terminal_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeTerminal()
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    terminal.print_diagnostics("error[x.y]: no\n  hint: do", fake)
    assert "\x1b[" in fake.getvalue() and "x.y" in fake.getvalue()
    plain = io.StringIO()
    terminal.print_diagnostics("error[x.y]: no\n  hint: do", plain)
    assert plain.getvalue() == "error[x.y]: no\n  hint: do\n"


def _args(**flags: bool) -> argparse.Namespace:
    return argparse.Namespace(json=flags.get("json", False), quiet=flags.get("quiet", False))


@pytest.mark.parametrize(
    ("flags", "tty", "wanted"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"json": True}, True, False),
        ({"quiet": True}, True, False),
    ],
    ids=["terminal", "captured", "json", "quiet"],
)
def test_a_progress_bar_only_on_a_terminal(
    flags: dict[str, bool], tty: bool, wanted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    stderr = FakeTerminal() if tty else io.StringIO()
    monkeypatch.setattr("sys.stderr", stderr)
    monkeypatch.setenv("TERM", "xterm")
    assert progress.bar_wanted(_args(**flags)) is wanted
    with progress.progress_bar(_args(**flags), "build") as bar:
        say = progress.step_lines(lambda line: None, bar)
        say("[2/5] scalar-wasm32: building")
        say("    compiled in 1.0s")
        assert (bar is progress.no_bar) is not wanted
    assert (stderr.getvalue() != "") is wanted  # drawn on the terminal, nowhere else


def test_step_and_counted_lines_move_the_bar() -> None:
    moves: list[tuple[int, int | None, str]] = []
    said: list[str] = []

    def bar(done: int, total: int | None, what: str) -> None:
        moves.append((done, total, what))

    step = progress.step_lines(said.append, bar)
    step("[3/7] build ...")
    step("    [1/2] nested lane")  # a nested step (release's build) is not the outer bar's
    counted = progress.counted_lines(said.append, bar)
    counted("chromium (f32 tier)")
    counted("firefox (f32 tier)")
    assert moves == [
        (2, 7, "build ..."),
        (0, None, "chromium (f32 tier)"),
        (1, None, "firefox (f32 tier)"),
    ]
    assert len(said) == 4  # every line is still said


def test_shell_completion_answers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    answer = tmp_path / "completions"
    line = "tinyrustlm-verify bun"
    monkeypatch.setenv("_ARGCOMPLETE", "1")
    monkeypatch.setenv("COMP_LINE", line)
    monkeypatch.setenv("COMP_POINT", str(len(line)))
    monkeypatch.setenv("_ARGCOMPLETE_STDOUT_FILENAME", str(answer))
    with pytest.raises(SystemExit) as info:
        verify_cli.main([])
    assert info.value.code == 0
    assert answer.read_text().split() == ["bundle"]
