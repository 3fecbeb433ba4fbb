"""The commands of ``metalog shell``: kafka-metadata-shell's verbs over the state at any point of a log.

Kafka's verbs and their output, from ``shell/src/main/java/org/apache/kafka/shell/command/``: ``ls`` (sorted
children, in columns as wide as the screen allows when interactive, one per line otherwise; several targets
each under ``name:``), ``cd``, ``pwd``, ``cat`` (a leaf's text), ``tree`` (a node and everything below it),
``find`` (every path below a node), ``man``, ``help``, ``history`` (the commands typed) and ``exit``, with
paths relative to the working directory, ``.`` and ``..``, and globs (``*``, ``?``, ``[...]``, ``{a,b}``: Kafka's
GlobComponent) in each path component; errors are Kafka's lines (``ls: x: no such file or directory.``).
metalog adds ``at POINT`` (move to the state published at or before it, saying which one),
``history PATH`` (every committed record that changed a node: ``metalog.replay.changes``) and ``why`` (what is
wrong with a partition, a broker or a directory here, since when: ``metalog.replay.why``).

Pure: a command writes lines to a stream and says whether it failed; the terminal is the CLI's business.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

from metalog.codec.uuid import Uuid
from metalog.errors import ExitShell, MetalogError, PointError
from metalog.replay import subjects as S
from metalog.replay.changes import changes, render
from metalog.replay.history import MetadataHistory
from metalog.replay.points import ReplayResult, format_time, parse_point
from metalog.replay.shell_syntax import split_words
from metalog.replay.shell_tree import Node, Provenance, root
from metalog.secrets import KEPT, Secrets
from metalog.state.image import MetadataImage
from metalog.text import escape


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    description: str  # Kafka's, for Kafka's verbs


COMMANDS = {c.name: c for c in [
    Command("at", "at [POINT]", "Show the state published at or before a point: an offset, a time (ISO 8601, or "
                                "epoch milliseconds written with ms) or end (metalog)."),
    Command("cat", "cat PATH...", "Show the contents of metadata files."),
    Command("cd", "cd [PATH]", "Set the current working directory."),
    Command("exit", "exit", "Exit the metadata shell."),
    Command("find", "find [PATH...]", "Search for nodes in the directory hierarchy."),
    Command("help", "help", "Display this help message."),
    Command("history", "history [N | PATH...]",
            "Print command history; with a PATH, every committed record that changed that node (metalog)."),
    Command("ls", "ls [PATH...]", "List metadata nodes."),
    Command("man", "man COMMAND", "Show the help text for a specific command."),
    Command("pwd", "pwd", "Print the current working directory."),
    Command("tree", "tree PATH...", "Show the contents of metadata nodes in a tree structure."),
    Command("why", "why TOPIC-N | broker N | directory UUID",
            "Why a partition is offline or under-replicated, a broker fenced, a directory lost, here (metalog)."),
]}


class MetadataShell:
    """The shell's state: the log, the published state shown, the working directory, the commands typed."""

    def __init__(self, history: MetadataHistory, result: ReplayResult, secrets: Secrets = KEPT) -> None:
        self.history = history
        self.secrets = secrets
        self.err: TextIO = sys.stderr
        self.cwd = "/"
        self.typed: list[str] = []
        self._show(result)

    # ---- the point in time -------------------------------------------------------------------------------------
    def _show(self, result: ReplayResult) -> None:
        self.result = result
        self.image: MetadataImage = result.image
        self.root: Node = root(result.image, self.provenance(), self.secrets)

    def provenance(self) -> Provenance:
        """Kafka's MetadataProvenance of the state shown: its offset, that batch's epoch, its time."""
        r, log = self.result, self.history.log
        epoch = -1
        if r.offset >= log.log_start_offset:
            epoch = next(log.batches(r.offset, validate=False)).partition_leader_epoch
        else:
            epoch = next((s.epoch for s in log.snapshot_ids() if s.end_offset - 1 == r.offset), -1)
        return Provenance(r.offset, epoch, -1 if r.timestamp is None else r.timestamp)

    def point_line(self) -> list[str]:
        """Which published state is shown, and why it is not the offset asked for (as ``replay`` says it)."""
        r = self.result
        lines = [f"offset {r.offset} at {format_time(r.timestamp)}"]
        note = r.note()
        return lines if note is None else [*lines, note]


    # ---- running a line -------------------------------------------------------------------------------------------
    def run(self, line: str, out: TextIO, err: TextIO | None = None, width: int | None = None) -> bool:
        """Run one command line; False when it failed (what failed is written to ``err``, by default ``out``)."""
        self.err = out if err is None else err
        try:
            words = split_words(line)
        except MetalogError as e:
            self.err.write(f"{e}\n")
            return False
        if not words:
            return True
        self.typed.append(line.strip())
        name, args = words[0], words[1:]
        handler: Callable[[list[str], TextIO, int | None], bool] | None = getattr(self, f"_cmd_{name}", None)
        if name not in COMMANDS or handler is None:
            return self._fail(f"{name}: unknown command. Type help to get a list of commands.")
        try:
            return handler(args, out, width)
        except (MetalogError, OSError) as e:
            return self._fail(f"{name}: {e}")

    def _fail(self, message: str) -> bool:
        self.err.write(escape(message) + "\n")
        return False

    # ---- paths ----------------------------------------------------------------------------------------------------
    def absolute(self, path: str) -> list[str]:
        """The components of ``path`` from the root: relative to the working directory, ``.`` and ``..`` resolved,
        repeated and trailing slashes ignored (Kafka's CommandUtils)."""
        full = path if path.startswith("/") else f"{self.cwd}/{path}"
        out: list[str] = []
        for part in full.split("/"):
            if part == "..":
                if out:
                    out.pop()
            elif part and part != ".":
                out.append(part)
        return out

    def glob(self, pattern: str) -> list[tuple[list[str], Node]]:
        """Every node the pattern names (Kafka's GlobVisitor: children tried in sorted order)."""
        found: list[tuple[list[str], Node]] = []

        def visit(parts: list[str], i: int, node: Node, path: list[str]) -> None:
            if i == len(parts):
                found.append((path, node))
                return
            if not node.is_directory:
                return
            regex = glob_regex(parts[i])
            if regex is None:
                child = node.child(parts[i])
                if child is not None:
                    visit(parts, i + 1, child, [*path, parts[i]])
                return
            for name in sorted(node.child_names()):
                if regex.fullmatch(name):
                    child = node.child(name)
                    if child is not None:
                        visit(parts, i + 1, child, [*path, name])

        visit(self.absolute(pattern), 0, self.root, [])
        return found

    def complete(self, line: str, text: str) -> list[str]:
        """Candidates for the word ``text`` at the end of ``line``: a command name, or a path (directories end
        with ``/``: Kafka's CommandUtils.completePath)."""
        words = line.split()
        if not words or (len(words) == 1 and not line.endswith(" ")):
            return [c for c in sorted(COMMANDS) if c.startswith(text)]
        if words[0] == "man":
            return [c for c in sorted(COMMANDS) if c.startswith(text)]
        slash = text.rfind("/")
        head, last = text[:slash + 1], text[slash + 1:]
        found = self.glob(head or ".") if head else [(self.absolute("."), self._node(self.absolute(".")))]
        out = []
        for _, node in found[:1]:
            if node is None or not node.is_directory:
                continue
            for name in sorted(node.child_names()):
                if name.startswith(last):
                    child = node.child(name)
                    out.append(head + name + ("/" if child is not None and child.is_directory else ""))
        return out

    def _node(self, parts: list[str]) -> Node | None:
        node: Node | None = self.root
        for part in parts:
            node = None if node is None or not node.is_directory else node.child(part)
        return node

    # ---- Kafka's verbs --------------------------------------------------------------------------------------------
    def _cmd_ls(self, args: list[str], out: TextIO, width: int | None) -> bool:
        ok, files, dirs = True, [], []
        for target in [a for a in args if a] or ["."]:
            found = self.glob(target)
            if not found:
                ok = self._fail(f"ls: {target}: no such file or directory.")
            for path, node in found:
                name = escape(path[-1]) if path else "/"
                if node.is_directory:
                    dirs.append((name, [escape(child) for child in sorted(node.child_names())]))
                else:
                    files.append(name)
        _entries(out, "", width, files)
        need_intro, first = bool(files) or len(dirs) > 1, not files
        for name, children in dirs:
            intro = ""
            if need_intro:
                intro = ("" if first else "\n") + f"{name}:"
                first = False
            _entries(out, intro, width, children)
        return ok

    def _cmd_cd(self, args: list[str], out: TextIO, width: int | None) -> bool:
        if len(args) > 1:
            return self._fail("cd: too many arguments.")
        target = args[0] if args else "/"
        found = self.glob(target)
        if not found:
            return self._fail(f"cd: {target}: no such directory.")
        ok = True
        for path, node in found:
            if not node.is_directory:
                ok = self._fail(f"cd: {target}: not a directory.")
            else:
                self.cwd = "/" + "/".join(path)
        return ok

    def _cmd_pwd(self, args: list[str], out: TextIO, width: int | None) -> bool:
        out.write(escape(self.cwd) + "\n")
        return True

    def _cmd_cat(self, args: list[str], out: TextIO, width: int | None) -> bool:
        if not args:
            return self._fail("cat: give a PATH")
        ok = True
        for target in args:
            found = self.glob(target)
            if not found:
                ok = self._fail(f"cat: {target}: No such file or directory.")
            for _, node in found:
                if node.is_directory:
                    ok = self._fail(f"cat: {target}: Is a directory")
                else:
                    out.writelines(escape(line) + "\n" for line in node.lines())
        return ok

    def _cmd_tree(self, args: list[str], out: TextIO, width: int | None) -> bool:
        if not args:
            return self._fail("tree: give a PATH")
        ok = True
        for target in args:
            found = self.glob(target)
            if not found:
                ok = self._fail(f"tree: {target}: No such file or directory.")
            for _, node in found:
                out.writelines(escape(line) + "\n" for line in node.lines())
        return ok

    def _cmd_find(self, args: list[str], out: TextIO, width: int | None) -> bool:
        ok = True
        for target in [a for a in args if a] or ["."]:
            found = self.glob(target)
            if not found:
                ok = self._fail(f"find: {target}: no such file or directory.")
            for path, node in found:
                # Kafka prints the path as typed; for a glob (where Kafka prints the pattern for every match)
                # metalog prints each match's own path
                shown = target if glob_regex_any(target) is False else "/" + "/".join(path)
                out.writelines(escape(line) + "\n" for line in _find(shown, node))
        return ok

    def _cmd_help(self, args: list[str], out: TextIO, width: int | None) -> bool:
        out.write("Welcome to metalog's metadata shell: kafka-metadata-shell's tree and commands, at any point "
                  "of the log.\n\n")
        wide = max(len(c.usage) for c in COMMANDS.values())
        out.writelines(f"  {c.usage.ljust(wide)}  {c.description}\n" for c in COMMANDS.values())
        out.write("\nPaths are relative to the working directory (cd, pwd); . and .. work, and * ? [...] {a,b} "
                  "match within a path component.\n")
        return True

    def _cmd_man(self, args: list[str], out: TextIO, width: int | None) -> bool:
        if len(args) != 1:
            return self._fail("man: give one COMMAND")
        c = COMMANDS.get(args[0])
        if c is None:
            return self._fail(f"man: unknown command {args[0]}. Type help to get a list of commands.")
        out.write(f"{c.name}: {c.description}\n\nusage: {c.usage}\n")
        return True

    def _cmd_exit(self, args: list[str], out: TextIO, width: int | None) -> bool:
        raise ExitShell

    def _cmd_history(self, args: list[str], out: TextIO, width: int | None) -> bool:
        if not args or (len(args) == 1 and re.fullmatch("[0-9]+", args[0])):
            # (a count longer than 18 digits is more than any shell typed: all of it)
            count = int(args[0]) if args and len(args[0]) <= 18 else len(self.typed)
            first = max(len(self.typed) - count, 0)
            out.writelines(f"{i:>5}  {escape(line)}\n" for i, line in enumerate(self.typed[first:], first + 1))
            return True
        ok = True
        for target in args:
            paths = [path for path, _ in self.glob(target)]
            if not paths and not glob_regex_any(target):  # a node that is not in this state may be in others
                paths = [self.absolute(target)]
            if not paths:
                ok = self._fail(f"history: {target}: no such file or directory.")
            for path in paths:
                subject = subject_of_path(path, self.secrets)
                rows = list(changes(self.history, subject))
                if len(paths) > 1 or len(args) > 1:
                    out.write(f"/{escape('/'.join(path))}:\n")
                out.writelines(line + "\n" for line in render(rows))
                if not rows:
                    out.write("no committed change\n")
        return ok

    def _cmd_why(self, args: list[str], out: TextIO, width: int | None) -> bool:
        from metalog.replay.why import ask
        from metalog.replay.why import render as render_why

        if not args:
            return self._fail("why: give TOPIC-N, broker N or directory UUID")
        out.writelines(line + "\n" for line in render_why(ask(self.history, self.result, " ".join(args))))
        return True

    def _cmd_at(self, args: list[str], out: TextIO, width: int | None) -> bool:
        if len(args) > 1:
            return self._fail("at: give one POINT: an offset, a time or end")
        if args:
            try:
                result = self.history.state_at_point(parse_point(args[0]))
            except PointError as e:
                return self._fail(f"at: {e}")
            self._show(result)
            if self._node(self.absolute(".")) is None:
                parts = self.absolute(".")
                while parts and self._node(parts) is None:
                    parts.pop()
                gone, self.cwd = self.cwd, "/" + "/".join(parts)
                out.write(f"{escape(gone)} is not in this state: now in {escape(self.cwd)}\n")
        out.writelines(line + "\n" for line in self.point_line())
        return True


def subject_of_path(path: list[str], secrets: Secrets = KEPT) -> S.Subject:
    """The question ``history PATH`` asks of a node of the tree (its secrets shown as ``secrets`` shows them)."""
    p = [*path, "", "", "", ""]
    if p[0] == "local":
        raise MetalogError(f"/{'/'.join(path)}: the shell's own node: the log never changes it")
    if p[0] != "image" or not path[1:]:
        return S.NodeSubject(path, secrets)
    if p[1] == "provenance":
        raise MetalogError("/image/provenance: changes at every published point (see 'at')")
    if p[1] == "topics" and p[2] in ("byName", "byId") and p[3]:
        return _topic_subject(path, p[2], p[3], p[4], secrets)
    if p[1] == "cluster" and p[2] == "brokers" and (broker := _int32(p[3])) is not None:
        return S.BrokerSubject(broker, partitions=False)
    if p[1] == "cluster" and p[2] == "controllers":
        return S.ControllerSubject(_int32(p[3]), quorum=False)
    if p[1] == "configs" and p[2]:
        type_name, _, name = p[2].partition(":")
        resource = S.parse_resource(f"{type_name}/{name}")
        return S.ConfigSubject(*resource, key=p[3] or None, secrets=secrets)
    if p[1] == "features" and not p[2]:
        return S.FeaturesSubject()
    return S.NodeSubject(path, secrets)


def _topic_subject(path: list[str], by: str, topic: str, partition_name: str, secrets: Secrets) -> S.Subject:
    """``/image/topics/byName|byId/TOPIC[/PARTITION]``: the topic, or one of its partitions."""
    partition = _int32(partition_name)
    if partition_name and partition is None:
        return S.NodeSubject(path, secrets)
    if by == "byName":
        return S.TopicSubject(topic, partition=partition, secrets=secrets)
    return S.TopicSubject(topic_id=Uuid.parse(topic), partition=partition, secrets=secrets)


def _int32(name: str) -> int | None:
    """A node name that is an int32 (a broker, controller or partition id), else None."""
    if re.fullmatch("-?[0-9]{1,10}", name) is None:
        return None
    value = int(name)
    return value if -(2**31) <= value < 2**31 else None


# ---- Kafka's GlobComponent, and ls's columns ----------------------------------------------------------------------
_REGEX_SPECIAL = set("$()+.[]^{|")
_GLOB_SPECIAL = set("*?\\{}[]")


def glob_regex(component: str) -> re.Pattern[str] | None:
    """GlobComponent.toRegularExpression: None for a literal (or a malformed glob, which Kafka takes literally).
    ``*`` and ``?`` match a line break too (Java's ``.`` does not): a name from the log that holds one is in reach."""
    try:
        regex = _Glob(component).regex()
        return None if regex is None else re.compile(regex, re.DOTALL)
    except (ValueError, re.error):
        return None


class _Glob:
    """A glob component read one character at a time (an escape, a group's delimiters or a character class at
    once), written out as a regular expression."""

    def __init__(self, component: str) -> None:
        self.text, self.i = component, 0
        self.out: list[str] = []
        self.literal, self.group = True, False

    def regex(self) -> str | None:
        """The regular expression, or None for a literal; ValueError for a malformed glob."""
        while self.i < len(self.text):
            c = self.text[self.i]
            self.i += 1
            step = _GLOB_STEPS.get(c)
            if step is None or (c in ",}" and not self.group):
                self.out.append(re.escape(c) if c in _REGEX_SPECIAL else c)
            else:
                step(self)
        if self.group:
            raise ValueError("unterminated glob group")
        return None if self.literal else "".join(self.out)

    def any_one(self) -> None:
        self.literal = False
        self.out.append(".")

    def any_run(self) -> None:
        self.literal = False
        self.out.append(".*")

    def escaped(self) -> None:
        if self.i == len(self.text):
            self.out.append("\\\\")
            return
        nxt = self.text[self.i]
        self.i += 1
        self.out.append(re.escape(nxt) if nxt in _GLOB_SPECIAL or nxt in _REGEX_SPECIAL else nxt)

    def group_open(self) -> None:
        if self.group:
            raise ValueError("nested glob groups")
        self.literal, self.group = False, True
        self.out.append("(?:(?:")

    def group_next(self) -> None:
        self.out.append(")|(?:")

    def group_close(self) -> None:
        self.group = False
        self.out.append("))")

    def char_class(self) -> None:
        self.literal = False
        text, i = self.text, self.i
        close = text.find("]", i + (1 if text[i:i + 1] in ("!", "^") else 0) + 1)
        if close < 0:
            raise ValueError("unterminated character class")
        body = text[i:close]
        if body[:1] in ("!", "^"):
            body = "^" + body[1:]
        self.out.append(f"[{_class_body(body)}]")
        self.i = close + 1


def _class_body(body: str) -> str:
    """A character class's body as Python's ``re`` reads what Java's Pattern reads. Java reads a ``[`` in a class as
    a class nested in it and ``&&`` as an intersection, which ``re`` has not: a ValueError (the glob taken
    literally, as Kafka takes ``[[a]``, whose outer class the nested one leaves unclosed). A doubled ``|``, ``~``,
    ``&`` or ``-`` is two characters to Java and a set operation to come to ``re`` (a FutureWarning now): escaped."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":  # an escape pair, as it is
            out.append(body[i:i + 2])
            i += 2
            continue
        if c == "[" or body.startswith("&&", i):
            raise ValueError("a nested character class or an intersection")
        out.append("\\" + c if c in "|~&" or (c == "-" and body[i - 1:i] == "-") else c)
        i += 1
    return "".join(out)


_GLOB_STEPS: dict[str, Callable[[_Glob], None]] = {
    "?": _Glob.any_one, "*": _Glob.any_run, "\\": _Glob.escaped, "{": _Glob.group_open, ",": _Glob.group_next,
    "}": _Glob.group_close, "[": _Glob.char_class}


def glob_regex_any(path: str) -> bool:
    """Whether any component of ``path`` is a glob."""
    return any(glob_regex(part) is not None for part in path.split("/") if part)


def _find(path: str, node: Node) -> Iterator[str]:
    yield path
    if node.is_directory:
        for name in sorted(node.child_names()):
            child = node.child(name)
            if child is not None:
                yield from _find(path + name if path == "/" else f"{path}/{name}", child)


def _entries(out: TextIO, intro: str, width: int | None, entries: list[str]) -> None:
    """LsCommandHandler.printEntries: one column without a screen; else the most columns that fit."""
    if not entries:
        return
    if intro:
        out.write(intro + "\n")
    columns, per_column, widths = _columns(width, entries)
    lines = (len(entries) + columns - 1) // columns
    for line in range(lines):
        text = []
        for column in range(columns):
            i = line + column * per_column
            if i < len(entries):
                text.append(entries[i] if column == columns - 1 else entries[i].ljust(widths[column]))
        out.write("".join(text) + "\n")


def _columns(width: int | None, entries: list[str]) -> tuple[int, int, list[int]]:
    """LsCommandHandler.calculateColumnSchema: (columns, entries per column, column widths)."""
    if width is None or width // 4 <= 1:
        return 1, len(entries), [0]
    best = (1, len(entries), [0])
    for columns in range(width // 4, 1, -1):
        per = (len(entries) + columns - 1) // columns
        widths = [0] * columns
        for i, entry in enumerate(entries):
            widths[i // per] = max(widths[i // per], len(entry) + 2)
        if widths[-1] != 0 and sum(widths) <= width:
            return columns, per, widths
    return best
