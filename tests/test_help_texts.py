"""Every help text tells the truth (issue 36): a walk of both command lines' parsers (every
subcommand, every argument) finds a help text for each argument and, where a metavar hides an
argument's choices, every choice in its help; and the texts that once said what was no longer
true say what is."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from pipeline.cli import parser as release_parser
from pipeline.publish.delegation import RELEASES_ROLE
from pipeline.publish.repo import ROTATABLE_ROLES
from verify.cli import parser as verify_parser

Found = tuple[str, argparse.ArgumentParser]


def _walk(parser: argparse.ArgumentParser, path: str) -> Iterator[Found]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")


PARSERS = [
    *_walk(release_parser(), "tinyrustlm-release"),
    *_walk(verify_parser(), "tinyrustlm-verify"),
]


def _help(argv_parser: argparse.ArgumentParser) -> str:
    return " ".join(argv_parser.format_help().split())


def _arguments(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            yield action


def test_the_walk_reaches_every_command() -> None:
    names = {path for path, _ in PARSERS}
    assert {"tinyrustlm-release serve", "tinyrustlm-release repo rotate"} <= names
    assert len(names) > 20


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=[path for path, _ in PARSERS])
def test_every_argument_has_a_help_text_naming_its_hidden_choices(
    path: str, parser: argparse.ArgumentParser
) -> None:
    for action in _arguments(parser):
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help != argparse.SUPPRESS, f"{path} {name}: no help"
        if action.choices is not None and action.metavar is not None:
            missing = [c for c in action.choices if str(c) not in action.help]
            assert not missing, f"{path} {name}: the help hides the choices {missing}"
        _help(parser)  # every help renders


def _parser(path: str) -> argparse.ArgumentParser:
    return dict(PARSERS)[path]


def test_serve_isolated_says_the_threads_lane_runs_either_way() -> None:
    text = _help(_parser("tinyrustlm-release serve"))
    assert "COOP/COEP" in text
    assert "(threads lane)" not in text  # it is not what gives the threads lane
    assert "the threads lane runs either way" in text
    assert "coi-serviceworker.js" in text


def test_repo_rotate_lists_every_role() -> None:
    text = _help(_parser("tinyrustlm-release repo rotate"))
    for role in (*ROTATABLE_ROLES, RELEASES_ROLE):
        assert role in text.split("usage:", 1)[1].split("options:", 1)[0], role
    listing = _help(_parser("tinyrustlm-release repo"))
    assert all(role in listing for role in (*ROTATABLE_ROLES, RELEASES_ROLE))
