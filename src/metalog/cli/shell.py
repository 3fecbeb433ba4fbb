"""``metalog shell``: kafka-metadata-shell's tree and commands over the state at any point of a log."""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import Any

EXAMPLES = """\
examples:
  metalog shell /var/lib/kafka/metadata                     # interactive, at the end of the log
  metalog shell LOGDIR --at 2024-05-01T10:32:00Z            # ... as it was at 10:32 UTC
  metalog shell LOGDIR -c 'ls /image/topics/byName; cat /image/cluster/brokers/3'
  metalog shell LOGDIR --at 1200 cat /image/topics/byName/orders/0     # one command, Kafka's way
  metalog shell LOGDIR -c 'history /image/topics/byName/orders/0'     # every record that changed it
  echo 'find /image/configs' | metalog shell LOGDIR                     # commands from stdin, one a line
  metalog shell 00000000000000005001-0000000003.checkpoint   # one snapshot, as kafka-metadata-shell --snapshot

The tree is Kafka's (3.6 and later): /local and /image, and under /image provenance, features, cluster
(brokers, controllers), topics (byName, byId), configs (TYPE:name), clientQuotas, producerIds, acls, scram and
delegationToken, each leaf printing what Kafka's shell prints. The commands are Kafka's: ls, cd, pwd, cat,
tree, find, man, help, history and exit; and metalog's: at POINT moves to the state Kafka's loader published
at or before that point (saying which one), history PATH lists every committed record that changed a node.
Paths take . and .. and globs (* ? [...] {a,b}). Interactive: line editing, history and tab completion of
commands and paths (with Python's readline). -c runs commands separated by ';'; the exit status is 1 when one
of them failed. A POINT is %s.
"""


def register(sub: Any) -> None:
    from metalog.cli import options
    from metalog.replay.points import POINT_FORMS

    p = sub.add_parser("shell", help="kafka-metadata-shell's tree and commands, at any offset or time",
                       description="Browse the metadata state Kafka's loader published at any point of the log, "
                                   "as kafka-metadata-shell shows the latest snapshot.",
                       epilog=EXAMPLES % POINT_FORMS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logdir", metavar="LOGDIR", help="a log directory (holding __cluster_metadata-0), or one "
                                                     ".checkpoint snapshot file (its state)")
    p.add_argument("--at", type=options.point, metavar="POINT",
                   help=f"start at the state published at or before this point: {options.STATE_HELP} (default: "
                        "end)")
    p.add_argument("-c", dest="commands", metavar="'CMD; CMD'", help="run these commands and exit")
    options.show_secrets(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                   help="one command and its arguments to run (as kafka-metadata-shell takes it)")
    p.set_defaults(func=_shell, parser=p)


def _options_after_logdir(args: argparse.Namespace) -> None:
    """``--at``, ``-c`` and ``--show-secrets`` given after LOGDIR (the command words take the rest of the line, so
    argparse leaves them there)."""
    from metalog.errors import MetalogError, PointError
    from metalog.replay.points import parse_point

    words = args.command
    while words and (words[0] in ("--at", "-c", "--show-secrets") or words[0].startswith("--at=")):
        if words[0] == "--show-secrets":
            args.show_secrets, words = True, words[1:]
            continue
        option, _, value = words[0].partition("=")
        if not value:
            if len(words) < 2:
                raise MetalogError(f"{option} needs a value")
            value, words = words[1], words[1:]
        if option == "--at":
            try:
                args.at = parse_point(value)
            except PointError as e:  # as argparse says it when --at comes before LOGDIR
                args.parser.error(f"argument --at: {e}")
        else:
            args.commands = value
        words = words[1:]
    args.command = words


def _shell(args: argparse.Namespace) -> int:
    from metalog.cli.options import resolving, secrets_of
    from metalog.errors import ExitShell
    from metalog.replay.history import MetadataHistory
    from metalog.replay.points import END
    from metalog.replay.shell import MetadataShell
    from metalog.replay.shell_syntax import split_commands

    _options_after_logdir(args)
    with MetadataHistory(args.logdir) as history:
        with resolving("--at"):
            result = history.state_at_point(END if args.at is None else args.at)
        shell = MetadataShell(history, result, secrets_of(args))
        interactive = args.commands is None and not args.command and sys.stdin.isatty()
        if not interactive and (note := shell.result.note()) is not None:
            print(note, file=sys.stderr)
        if args.commands is not None or args.command:
            lines = split_commands(args.commands) if args.commands is not None else []
            if args.command:
                import shlex

                lines.append(shlex.join(args.command))
        elif not sys.stdin.isatty():
            lines = [c for line in sys.stdin for c in split_commands(line)]
        else:
            return _interactive(shell, args.logdir)
        ok = True
        try:
            for line in lines:
                ok = shell.run(line, sys.stdout, sys.stderr) and ok
        except ExitShell:
            pass
        return 0 if ok else 1


def _interactive(shell: Any, logdir: str) -> int:
    from metalog.errors import ExitShell
    from metalog.replay.shell_syntax import split_commands
    from metalog.text import path_text

    _readline(shell)
    print(f"[ metalog shell: {path_text(logdir)} ]")
    for line in shell.point_line():
        print(line)
    print("Type help to get a list of commands.")
    while True:
        try:
            line = input(">> ")
        except KeyboardInterrupt:
            print("^C")
            continue
        except EOFError:
            print()
            return 0
        try:
            for command in split_commands(line):
                shell.run(command, sys.stdout, sys.stdout, width=shutil.get_terminal_size().columns)
        except ExitShell:
            return 0
        except KeyboardInterrupt:  # a long history or find
            print("^C")


def _readline(shell: Any) -> None:
    """Line editing, history and tab completion with the standard library's readline, when it is there."""
    try:
        import readline
    except ImportError:  # (Windows without pyreadline): plain input() still works
        return
    from metalog.errors import MetalogError

    matches: list[str] = []

    def complete(text: str, state: int) -> str | None:
        nonlocal matches
        if state == 0:
            line = readline.get_line_buffer()[:readline.get_endidx()]
            try:
                matches = shell.complete(line, text)
            except MetalogError:  # completion never breaks the prompt (a damaged log's node offers nothing)
                matches = []
        return matches[state] if state < len(matches) else None

    readline.set_completer(complete)
    readline.set_completer_delims(" \t\n;")
    if "libedit" in (readline.__doc__ or ""):
        readline.parse_and_bind("bind ^I rl_complete")
    else:
        readline.parse_and_bind("tab: complete")
