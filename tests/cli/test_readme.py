"""The examples of README.md and of every page of docs/ print what the page shows.

Shell examples (lines ``$ command`` in a fenced block, followed by their output) run in order in one scratch
directory, where ``tests`` points at this repository's tests: README.md's first, then the pages' in the order of
mkdocs.yml's nav (a page may use what an earlier one made: the histories of docs/generate.md). A line ``...`` in
the shown output stands for lines left out. A Python example followed by ``prints`` and a block runs and prints
exactly that block. Examples that time things or start a JVM are not run (SKIP); the test counts what it checked
so it cannot pass by checking nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def nav_pages() -> list[Path]:
    """docs/*.md in the order of mkdocs.yml's nav (its entries ``- Title: page.md``)."""
    nav = (ROOT / "mkdocs.yml").read_text().partition("\nnav:\n")[2]
    return [DOCS / name for name in re.findall(r"^\s*- [^:\n]+: (\S+\.md)$", nav, re.MULTILINE)]


def pages() -> list[Path]:
    """Every page whose examples run, in the order they run."""
    return [README, *nav_pages()]
# timings, Spark's JVM, fresh random directory ids (a format example with --release-version shows them as ...),
# whole-program runs with their own tests, or Prometheus (random block ids; a server)
SKIP = re.compile(r"^(metalog (bench|demo)\b|spark-submit|bash scripts/|promtool |prometheus )"
                  r"|^metalog analyze (?!.*--engine python)|^metalog format (?!.*--release-version)")


@dataclass
class Block:
    lang: str
    lines: list[str]
    before: str  # the prose between the previous block and this one
    line: int  # where the block starts in its page


def blocks(text: str) -> list[Block]:
    found, prose, lines, lang, start = [], [], None, "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```"):
            if lines is None:
                lines, lang, start = [], line[3:].strip(), number
            else:
                found.append(Block(lang, lines, "\n".join(prose).strip(), start))
                lines, prose = None, []
        elif lines is None:
            prose.append(line)
        else:
            lines.append(line)
    return found


def commands(block: Block) -> list[tuple[str, list[str]]]:
    """(command, the output shown for it) for each ``$ `` line of a shell example."""
    out: list[tuple[str, list[str]]] = []
    for line in block.lines:
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return out


def matches(shown: list[str], actual: list[str]) -> bool:
    """The shown lines are the actual ones, where each ``...`` line stands for any number of lines."""
    pattern = "".join(".*?" if line == "..." else re.escape(line + "\n") for line in shown)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual), re.DOTALL) is not None


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    work = tmp_path_factory.mktemp("readme")
    (work / "tests").symlink_to(ROOT / "tests")
    bin_dir = work.parent / f"{work.name}-bin"
    bin_dir.mkdir()
    metalog = bin_dir / "metalog"
    metalog.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m metalog.cli.main "$@"\n')
    metalog.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONUNBUFFERED": "1",
           "COLUMNS": "80"}
    return work, env


def test_every_page_is_in_the_nav_once() -> None:
    """A page left out of mkdocs.yml's nav would have its examples left out of the run below."""
    assert sorted(nav_pages()) == sorted(DOCS.glob("*.md"))
    assert len(set(nav_pages())) == len(nav_pages())


@pytest.mark.slow  # some hundred commands, each a process of its own
def test_the_examples_print_what_their_pages_show(scratch: tuple[Path, dict[str, str]]) -> None:
    work, env = scratch
    checked = skipped = python = 0
    failures = []
    for page in pages():
        name = page.relative_to(ROOT)
        all_blocks = blocks(page.read_text())
        for i, block in enumerate(all_blocks):
            shell = commands(block)
            if shell:
                if any(SKIP.search(cmd) for cmd, _ in shell):
                    skipped += 1
                    continue
                for cmd, shown in shell:
                    done = subprocess.run(["bash", "-c", cmd + " 2>&1"], cwd=work, env=env, capture_output=True,
                                          text=True, timeout=300)
                    actual = done.stdout.splitlines()
                    if not matches(shown, actual):
                        failures.append(f"{name}:{block.line}: $ {cmd}\n--- shown\n" + "\n".join(shown)
                                        + "\n--- printed\n" + "\n".join(actual))
                    checked += 1
            elif block.lang == "python" and i + 1 < len(all_blocks) and all_blocks[i + 1].before.endswith("prints"):
                done = subprocess.run([sys.executable, "-c", "\n".join(block.lines)], cwd=work, env=env,
                                      capture_output=True, text=True, timeout=300)
                shown = all_blocks[i + 1].lines
                if done.stdout.splitlines() != shown:
                    failures.append(f"{name}:{block.line}: python example\n--- shown\n" + "\n".join(shown)
                                    + "\n--- printed\n" + done.stdout + done.stderr)
                python += 1
    assert not failures, "\n\n".join(failures)
    # the one-file README's last version had 123 commands, 2 python examples and 7 skipped blocks; the front page's
    # tour added 6 commands
    assert checked >= 129 and python >= 2 and skipped <= 7, (checked, python, skipped)


@pytest.mark.parametrize(("shown", "actual", "ok"), [
    (["a", "b"], ["a", "b"], True),
    (["a"], ["a", "b"], False),
    (["a", "...", "d"], ["a", "b", "c", "d"], True),
    (["a", "...", "d"], ["a", "b", "c", "d", "e"], False),
    (["...", "c"], ["a", "b", "c"], True),
    (["a", "...", "c", "...", "e"], ["a", "c", "e"], True),
    (["a.b"], ["axb"], False),
])
def test_matches(shown: list[str], actual: list[str], ok: bool) -> None:
    assert matches(shown, actual) is ok


def test_the_column_tables_list_every_column_in_order() -> None:
    from metalog.analysis.domain.schema import BROKERS, DIRECTORIES, EVENTS, FAILURES, TIMELINE

    tables = re.findall(r"\| column \| meaning \|\n\|---\|---\|\n((?:\|.*\|\n)+)", (DOCS / "analysis.md").read_text())
    names = [re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE) for table in tables]
    assert names == [list(t.names) for t in (TIMELINE, EVENTS, BROKERS, DIRECTORIES, FAILURES)]
