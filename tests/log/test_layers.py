"""The log package stands below snapshots: nothing in ``metalog.log`` imports ``metalog.snapshots``."""

from __future__ import annotations

import ast
from pathlib import Path

import metalog.log

LOG_PACKAGE = Path(metalog.log.__file__).parent


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_log_package_does_not_import_snapshots():
    offenders = {p.name: sorted(m for m in _imported_modules(p) if m.startswith("metalog.snapshots"))
                 for p in sorted(LOG_PACKAGE.glob("*.py"))}
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def test_snapshot_names_are_re_exported_for_api_users():
    from metalog import snapshots
    from metalog.log import snapshot_files
    from metalog.snapshots import files

    for name in ("SnapshotId", "list_snapshots", "parse_name"):
        assert getattr(snapshots, name) is getattr(snapshot_files, name) is getattr(files, name)
    assert files.clean_snapshot_dir is snapshot_files.clean_snapshot_dir
