"""``metalog <verb>``: each verb's module registers its own sub-commands.

A verb module has ``register(subparsers)`` that adds its parser and sets ``func`` to a
function ``(args) -> int`` (the exit status). Errors metalog raises on purpose print as one
line and exit non-zero; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import signal
import sys
from typing import NoReturn

from metalog import __version__
from metalog.cli.notices import error, recovery_notices
from metalog.errors import MetalogError

# Verb modules, in the order --help lists them.
VERBS = ["codec", "log", "snapshot", "replay", "history", "shell", "why", "quorum", "generate", "demo", "assign",
         "format", "storage", "simulate", "analyze", "bench"]
COMMANDS_OF = {"replay": ("replay", "diff")}  # the commands a verb module registers, where not only its own name


EXAMPLES = """\
examples:
  metalog demo                                   # see it work: generate, replay, diff, analyse
  metalog generate /tmp/cluster --scenario mixed # a realistic history as a real log directory
  metalog log dump /tmp/cluster                  # like kafka-dump-log --cluster-metadata-decoder
  metalog replay /tmp/cluster --at 5000          # the cluster's state at a point in time
  metalog why /tmp/cluster topic-3-0             # offline? under-replicated? since when, which record
  metalog analyze /tmp/cluster --out analysis    # migration timelines, events, report.html
  metalog bench                                  # throughput on this machine
  metalog VERB --help                            # each verb's options and examples
"""


class Parser(argparse.ArgumentParser):
    """argparse's parser, with its errors in one line (``metalog replay: error: argument --at: ...``, exit
    status 2, as argparse's) rather than the usage and the error; every verb's parser is one (argparse makes a
    sub-command's parser of its parent's class)."""

    def error(self, message: str) -> NoReturn:
        from metalog.text import escape

        self.exit(2, f"{self.prog}: error: {escape(message)} (see {self.prog} --help)\n")


class _Version(argparse.Action):
    """``metalog --version``: the version, and which codec core, log core and analysis step run (compiled or pure,
    and why)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from metalog.analysis.domain import twins
        from metalog.bench.cores import log_status
        from metalog.codec import core

        parser.exit(message=f"metalog {__version__}\ncodec: {core.status()}\nlog: {log_status()}\n"
                            f"analysis: {twins.status()}\n")


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """metalog's parser: every verb's, or only the verb module ``verb``'s commands (what a command line naming one
    of them parses, ``verb_module``: the other verbs' modules are neither imported nor registered; the command's
    ``--help``, errors and values are the same)."""
    parser = Parser(
        prog="metalog",
        description="Read, write, replay and analyse Kafka's KRaft cluster-metadata log.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, help="show metalog's version and which codec and log cores run")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in VERBS if verb is None else [verb]:
        module = importlib.import_module(f"metalog.cli.{name}")
        module.register(sub)
    return parser


def verb_module(argv: list[str]) -> str | None:
    """The verb module (``VERBS``) of the command a command line names: its first word not an option (metalog's
    own options take no value); None where it names none (no command, or a word argparse refuses, listing them)."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return next((verb for verb in VERBS if word in COMMANDS_OF.get(verb, (verb,))), None)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(verb_module(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        if getattr(args, "reports_recovery", False):  # the verb's own output is the recovery report
            return int(args.func(args) or 0)
        with recovery_notices():
            return int(args.func(args) or 0)
    except MetalogError as e:
        if args.debug:
            raise
        error(e)
        return 1
    except BrokenPipeError:  # the reader (head, less) went away: not an error; before OSError, its base
        return 0
    except OSError as e:  # a missing file, a file where a directory should be, a full disk, ...
        if args.debug:
            raise
        where = f": {e.filename}" if e.filename else ""
        error(f"{e.strerror or e}{where}")
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        print("metalog: interrupted", file=sys.stderr)
        return 130


def run(argv: list[str] | None = None) -> NoReturn:
    """The command line's entry point (``metalog``, ``python -m metalog.cli.main``): ``main``, then exit with its
    status. Once ``main`` has returned the outcome is decided, so SIGINT is ignored from then on: the interpreter's
    teardown takes a few tenths of a second after an analysis (pyarrow and the report's libraries loaded), and
    Python gives SIGINT back its default action there, so a Ctrl-C landing in it killed a command that had finished
    (an analysis that had written and listed its outputs ended by signal, -2, with no word).

    Every object then alive is frozen out of the cyclic garbage collector's reach (``gc.freeze``): the teardown
    runs the collector over the whole heap four times, each pass walking every module's objects (pyarrow's, the
    report's), to free what the process's end frees anyway: 73M of an analysis' 4.6G instructions on a 250k-record
    log, 45M of a replay's 1.1G (objects are still freed as their last reference goes; Python promises no finalizer
    for what is left in a cycle at exit, and ``main`` has closed every file it wrote)."""
    try:
        status = main(argv)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # kept through finalization: Python resets only a handler
        gc.freeze()
    raise SystemExit(status)


if __name__ == "__main__":
    run()
