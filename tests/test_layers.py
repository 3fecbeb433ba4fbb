"""The layers hold: import-linter's contracts in pyproject.toml are kept and cover every package, every
exception metalog raises on purpose is defined in metalog/errors.py, and a name is exported from one place."""

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
# names a module's __all__ may export from elsewhere, each with its reason; the list only shrinks
RE_EXPORTS = {
    # the generated message modules' one import point: everything they use, in one line they all share
    "codec/runtime.py": {"Uuid", "ZERO", "Malformed"},
    # the codec's own errors where the codec's API is
    "codec/__init__.py": {"CodecError", "DecodeError", "EncodeError", "UnknownMessageError"},
    # a snapshot's id and name, defined with the log's other file names (log/snapshot_files.py)
    "snapshots/__init__.py": {"SnapshotId", "list_snapshots", "parse_name"},
}


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


def _exported_from_elsewhere(path: Path) -> set[str]:
    """Names in ``path``'s ``__all__`` that it imports rather than defines; a package's ``__init__`` may export
    what its own modules define (its API in one place: ``metalog.log.MetadataLog``)."""
    tree = ast.parse(path.read_text())
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    own = package if path.name == "__init__.py" else None
    imported: set[str] = set()
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not (own and (node.module or "").startswith(own + ".")):
            imported.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            imported.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exported = list(ast.literal_eval(node.value))
    return imported & set(exported)


def test_every_name_is_exported_from_one_place() -> None:
    # mypy --strict (no implicit re-export) refuses an import of a name from a module that only imports it; this
    # keeps __all__ from making it exported twice (MetadataHistory from metalog.replay.history only, format_time
    # from metalog.replay.points only, ...)
    found = {str(p.relative_to(ROOT)): names for p in sorted(ROOT.rglob("*.py")) if "codec/messages" not in str(p)
             and (names := _exported_from_elsewhere(p))}
    unlisted = {path: names - RE_EXPORTS.get(path, set()) for path, names in found.items()}
    assert not {path: names for path, names in unlisted.items() if names}
