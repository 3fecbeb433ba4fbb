"""The documentation: README.md, the front page, and the site built from docs/ with MkDocs (mkdocs.yml).

``mkdocs build --strict`` fails on a link to a page or an anchor that is not there and on a page left out of the
nav (mkdocs.yml's ``validation``); the build here goes to a temporary directory (no built site is committed).
README.md is shown by GitHub and not built by MkDocs, so its links are checked here; every anchor, in README.md and
in the pages, must also be the one GitHub makes of its heading, so that the links work read on GitHub too. The
examples on every page are run by tests/cli/test_readme.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# a link's target in markdown: ](target) outside code; images too
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # NO_MKDOCS_2_WARNING: the theme's banner about MkDocs 2 on every build, not a warning of this site's
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def prose(text: str) -> str:
    """The text outside fenced blocks and inline code, where a link is a link."""
    text = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def shown(heading: str) -> str:
    """A heading's text as rendered: no backticks, a link's text only."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", shown(heading).lower()).replace(" ", "-")


def anchors(page: Path) -> tuple[set[str], set[str]]:
    """The anchors of a page's headings: MkDocs' (Python-Markdown's toc) and GitHub's."""
    headings = HEADING.findall(re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL))
    return {slugify(shown(h), "-") for h in headings}, {github_anchor(h) for h in headings}


def links(page: Path) -> list[tuple[Path, str]]:
    """(the file, the anchor or '') of each relative link of a page."""
    out = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        out.append(((page.parent / path).resolve() if path else page, anchor))
    return out


def test_the_front_page_is_a_front_page() -> None:
    """Issue #26: the README is what metalog is, the two commands, a short tour and links; the rest is in docs/."""
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    assert "bash scripts/demo.sh" in text and "bash scripts/test.sh" in text
    linked = {path for path, _ in links(README)}
    assert {page for page in DOCS.glob("*.md") if page.name != "index.md"} <= linked


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda page: page.name)
def test_every_link_names_a_file_and_a_heading_there_both_ways(page: Path) -> None:
    for path, anchor in links(page):
        assert path.exists(), f"{page.name}: a link to {path}, which does not exist"
        if anchor:
            assert path.suffix == ".md", f"{page.name}: an anchor in {path.name}, which is no page"
            mkdocs, github = anchors(path)
            assert anchor in mkdocs and anchor in github, f"{page.name}: #{anchor} is no heading of {path.name}"


def test_the_anchor_rules() -> None:
    """What the link test relies on: the two rules agree on these headings and GitHub's keeps repeated hyphens."""
    heading = "Kafka's controller metrics in Prometheus and Grafana: `controller_metrics.om`"
    assert slugify(shown(heading), "-") == github_anchor(heading) == \
        "kafkas-controller-metrics-in-prometheus-and-grafana-controller_metricsom"
    assert github_anchor("a - b") == "a---b" != slugify("a - b", "-")


class Paragraphs(HTMLParser):
    """The text of every <p> of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "p":
            self.open.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self.open:
            self.texts.append(self.open.pop())

    def handle_data(self, data: str) -> None:
        if self.open:
            self.open[-1] += data


@pytest.mark.slow  # MkDocs and its theme: about 2 s of CPU
def test_the_site_builds_strictly_with_every_page_and_list(tmp_path: Path) -> None:
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    for page in DOCS.glob("*.md"):
        html = tmp_path / "site" / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        parser = Paragraphs()
        parser.feed(html.read_text())
        # a list Python-Markdown did not read as one (no blank line before it, or a nested level indented by 2
        # where it wants 4) is left as a paragraph of '- ...' lines
        unread = [line for text in parser.texts for line in text.splitlines()
                  if re.match(r"\s*([-*+]|\d+\.)\s", line)]
        assert not unread, f"{page.name}: lines of a list rendered as a paragraph: {unread[:3]}"


@pytest.mark.slow  # three builds
@pytest.mark.parametrize(("broken", "says"), [
    ("[a page](nowhere.md)", "nowhere.md"),
    ("[an anchor](codec.md#nowhere)", "#nowhere"),
    (None, "not-in-nav.md"),
])
def test_a_broken_link_or_a_page_left_out_fails_the_build(tmp_path: Path, broken: str | None, says: str) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs")
    if broken:
        with open(tmp_path / "docs" / "log.md", "a") as page:
            page.write(f"\nSee {broken}.\n")
    else:
        (tmp_path / "docs" / "not-in-nav.md").write_text("# A page no one can reach\n")
    done = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert says in done.stdout + done.stderr
