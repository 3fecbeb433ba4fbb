"""The layers hold: import-linter's contracts in pyproject.toml are kept and cover every package, and every
exception metalog raises on purpose is defined in metalog/errors.py."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import metalog

ROOT = Path(metalog.__file__).parent
PYPROJECT = ROOT.parents[1] / "pyproject.toml"
# construct's parser needs its own exception types; they never leave reference.py (found errors become DecodeError)
CONSTRUCT_ERRORS = {("codec/reference.py", "Bad"), ("codec/reference.py", "Located")}


def _contracts() -> dict[str, dict[str, object]]:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def test_every_package_has_a_layer() -> None:
    layers = _contracts()["layers"]["layers"]
    named = {name.strip() for layer in layers for name in str(layer).split("|")}  # type: ignore[attr-defined]
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"}
    assert named == packages | modules


@pytest.mark.skipif(shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None,
                    reason="import-linter is not installed (pip install -e '.[test]')")
def test_the_import_contracts_are_kept() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    done = subprocess.run([lint, "--no-cache"], cwd=PYPROJECT.parent, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "3 kept, 0 broken" in done.stdout


def _exception_classes(path: Path) -> list[str]:
    """Classes in ``path`` whose bases name an exception (``...Error``, ``Exception``, ...)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            if any(b.endswith(("Error", "Exception", "Malformed", "Problem", "Full")) or b in ("Rejected",)
                   for b in bases):
                found.append(node.name)
    return found


def test_every_exception_raised_on_purpose_is_defined_in_errors() -> None:
    elsewhere = {(str(p.relative_to(ROOT)), name) for p in ROOT.rglob("*.py") if p.name != "errors.py"
                 and "codec/messages" not in str(p) for name in _exception_classes(p)}
    assert elsewhere == CONSTRUCT_ERRORS
    assert len(_exception_classes(ROOT / "errors.py")) >= 20
