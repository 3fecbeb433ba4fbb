"""``metalog.cli.main``: a command line that names a verb builds that verb's parser only (the other verbs' modules
are not imported), and parses and helps exactly as the parser of every verb does."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from metalog.cli.main import COMMANDS_OF, VERBS, build_parser, verb_module
from tests.waiting import DEADLINE


def _verb_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(found.choices)


@pytest.mark.parametrize("verb", VERBS)
def test_one_verbs_parser_is_that_verbs_in_the_whole_parser(verb: str) -> None:
    alone, whole = _verb_parsers(build_parser(verb)), _verb_parsers(build_parser())
    assert list(alone) == list(COMMANDS_OF.get(verb, (verb,)))
    for command, parser in alone.items():
        assert parser.format_help() == whole[command].format_help()
    assert build_parser(verb).format_usage() == build_parser().format_usage()


def test_each_command_is_found_in_its_verbs_module() -> None:
    for command in _verb_parsers(build_parser()):
        assert command in _verb_parsers(build_parser(verb_module([command])))


@pytest.mark.parametrize(("argv", "verb"), [
    (["analyze", "x", "--out", "y"], "analyze"),
    (["diff", "x", "--from", "1"], "replay"),
    (["--debug", "log", "dump", "x"], "log"),
    (["--debug"], None),
    ([], None),
    (["--version"], None),
    (["bogus", "analyze"], None),  # argparse refuses bogus, naming every verb
    (["-h"], None),
])
def test_the_verb_a_command_line_names(argv: list[str], verb: str | None) -> None:
    assert verb_module(argv) == verb


# the modules a command line imports before its verb runs, in a fresh interpreter
IMPORTED = """
import json, sys
from metalog.cli.main import build_parser, verb_module
argv = sys.argv[1:]
build_parser(verb_module(argv)).parse_args(argv)
print(json.dumps(sorted(sys.modules)))
"""


def _imported(argv: list[str]) -> set[str]:
    done = subprocess.run([sys.executable, "-c", IMPORTED, *argv], capture_output=True, text=True, check=True,
                          timeout=DEADLINE)
    return set(json.loads(done.stdout))


def test_an_analysis_imports_no_other_verb_and_reads_no_log_before_it_runs() -> None:
    """``metalog analyze``'s parser (its --help lists every table's columns) imported every verb's module and,
    through the growth tables' columns, the log reader and the state (about 40 ms of a 1.4 s analysis)."""
    found = _imported(["analyze", "logdir", "--out", "out", "--engine", "python"])
    assert {f"metalog.cli.{v}" for v in VERBS} & found == {"metalog.cli.analyze"}
    assert {"metalog.log", "metalog.state", "metalog.analysis.outputs.growth"} & found == set()


# every layer that registers an analysis twin imported, the growth pass first (its twin then the first loaded)
VERSION = """
import metalog.analysis.outputs.growth, metalog.analysis.outputs.openmetrics, metalog.analysis.outputs.report.series
import metalog.analysis.outputs.sampling, metalog.analysis.domain.step, metalog.analysis.domain.loop
from metalog.codec import core
for twin in core.registered("analysis"):
    assert twin.loaded is None or isinstance(twin.loaded.CYTHON_VERSION, str), twin.module
from metalog.cli.main import main
main(["--version"])
"""


def test_the_version_names_the_analysis_core_whichever_twin_loaded_first() -> None:
    """``metalog --version`` raised AttributeError where the growth pass' twin was the first of the analysis core
    loaded (as the whole parser imported it): three of its compiled modules had no CYTHON_VERSION."""
    done = subprocess.run([sys.executable, "-c", VERSION], capture_output=True, text=True, timeout=DEADLINE)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "\nanalysis: compiled (Cython " in done.stderr or "\nanalysis: pure Python (" in done.stderr  # (argparse's
    # exit message: on standard error)
