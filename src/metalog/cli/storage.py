"""``metalog storage info``: ``kafka-storage info`` for log directories, with each directory's own id and its
bootstrap metadata."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metalog.errors import MetalogError

if TYPE_CHECKING:
    from metalog.storage.info import DirectoryInfo, StorageInfo

EXAMPLES = """\
examples:
  metalog storage info /data/d1 /data/d2 /data/meta      # the directories a node uses
  metalog storage info --config server.properties        # its log.dirs (or log.dir) and metadata.log.dir
  metalog storage info /data/d1 --json | jq .problems

As kafka-storage info: the directories found, the first one's meta.properties ("Found metadata"), and the
problems (a path that is missing or not a directory, a directory that is not formatted, a meta.properties that
does not load, cluster or node ids that differ between directories), with exit status 1 when there are any.
metalog also shows each directory's own directory.id, whether it holds the metadata log (__cluster_metadata-0)
and its bootstrap.checkpoint, and finds a reserved directory.id or one shared by two directories.
"""


def register(sub: Any) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("storage", help="log directories' meta.properties and bootstrap metadata (kafka-storage info)",
                       description="Kafka's storage directories, as kafka-storage reads them.", epilog=EXAMPLES,
                       formatter_class=fmt)
    verbs = p.add_subparsers(dest="storage_verb", metavar="COMMAND", required=True)
    info = verbs.add_parser("info", help="what each directory's meta.properties says, and the problems "
                                         "(kafka-storage info)", epilog=EXAMPLES, formatter_class=fmt)
    info.add_argument("dirs", nargs="*", metavar="DIR", help="log directories")
    info.add_argument("--config", "-c", metavar="FILE", help="a server.properties: its log.dirs (or log.dir) and "
                                                             "metadata.log.dir")
    info.add_argument("--json", action="store_true", help="one JSON object")
    info.set_defaults(func=_info)


def _info(args: argparse.Namespace) -> int:
    from metalog.storage.info import storage_info

    dirs = list(args.dirs) + (config_dirs(Path(args.config)) if args.config else [])
    if not dirs:
        raise MetalogError("give log directories, or --config with a server.properties that names them")
    info = storage_info(list(dict.fromkeys(dirs)))
    if args.json:
        print(json.dumps(info.to_json()))
    else:
        print("\n".join(info_lines(info)))
    return 1 if info.problems else 0


def config_dirs(path: Path) -> list[str]:
    """Kafka's configToLogDirectories: log.dirs (else log.dir), and metadata.log.dir when set."""
    from metalog.log.files import read_properties

    try:
        props = read_properties(path)
    except UnicodeDecodeError as e:
        raise MetalogError(f"{path}: not a properties file: {e}") from None
    dirs = [d.strip() for d in props.get("log.dirs", props.get("log.dir", "")).split(",") if d.strip()]
    if props.get("metadata.log.dir"):
        dirs.append(props["metadata.log.dir"])
    if not dirs:
        raise MetalogError(f"{path} names no log.dirs, log.dir or metadata.log.dir")
    return dirs


def info_lines(info: StorageInfo) -> list[str]:
    """Kafka's lines (Found log directories, Found metadata, Found problems), then each directory's facts."""
    from metalog.replay.printable import name

    found = [d for d in info.directories if d.found]
    lines: list[str] = []
    if found:
        lines += [f"Found log director{'y' if len(found) == 1 else 'ies'}:", *(f"  {name(d.path)}" for d in found), ""]
    if info.metadata is not None:
        shown = ", ".join(f"{k}={name(v)}" for k, v in sorted(info.metadata.items()))
        lines += [f"Found metadata: {{{shown}}}", ""]
    if found:
        lines += ["Found in each directory:", *(f"  {name(d.path)}: {_facts(d)}" for d in found), ""]
    if info.problems:
        lines += [f"Found problem{'' if len(info.problems) == 1 else 's'}:", *(f"  {name(p)}" for p in info.problems),
                  ""]
    return lines[:-1] if lines and lines[-1] == "" else lines


def _facts(d: DirectoryInfo) -> str:
    from metalog.cli.format import features_text
    from metalog.replay.printable import name

    props = d.properties
    parts = ["not formatted" if props is None else f"directory.id={name(props.get('directory.id', '-'))}"]
    if d.metadata_log:
        parts.append("the metadata log (__cluster_metadata-0)")
    if d.bootstrap is not None:
        b = d.bootstrap
        parts.append(f"bootstrap.checkpoint: {features_text(b.features) if b.error is None else 'unreadable'}")
    return ", ".join(parts)
