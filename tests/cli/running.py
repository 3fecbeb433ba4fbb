"""metalog's CLI run in this process, as the CLI tests run it: its exit status and what it printed."""

from __future__ import annotations

import io
import sys

import pytest

from metalog.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str = "") -> tuple[int, str, str]:
    """``metalog ARGV`` with ``stdin`` as its standard input: (exit status, stdout, stderr)."""
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        code = main(argv)
    finally:
        sys.stdin = old
    out, err = capsys.readouterr()
    return code, out, err


def help_text(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """``metalog ARGV --help``: what it prints (it exits with status 0)."""
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out
