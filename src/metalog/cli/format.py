"""``metalog format``: give log directories their meta.properties, like ``kafka-storage format``."""

from __future__ import annotations

import argparse
import os
from typing import Any

from metalog.errors import MetalogError
from metalog.text import path_text

EXAMPLES = """\
examples:
  metalog format --log-dirs /data/d1,/data/d2,/data/d3 --node-id 1 --cluster-id MkU3OEVBNTcwNTJENDM2Qg
  metalog format --log-dirs /data/d1,/data/d4 --node-id 1 --cluster-id MkU3OEVBNTcwNTJENDM2Qg --ignore-formatted

Each directory gets meta.properties with version=1, cluster.id, node.id and a fresh, non-reserved
directory.id: the id the broker registers (BrokerRegistrationRequest.LogDirs) and partitions name
in their Directories (KIP-858).
"""


def register(sub: Any) -> None:
    from metalog.cli import options

    p = sub.add_parser("format", help="write meta.properties into log directories (kafka-storage format)",
                       description="Formats broker log directories: meta.properties v1 with the cluster id, the "
                                   "node id and a new directory id per directory.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log-dirs", required=True, help="comma-separated log directories")
    p.add_argument("--node-id", type=options.NODE_ID, required=True, help="the node.id of the broker or controller")
    p.add_argument("--cluster-id", required=True, help="the cluster id (a 22-character Kafka Uuid)")
    p.add_argument("--ignore-formatted", action="store_true", help="skip directories already formatted")
    p.set_defaults(func=_format)


def _format(args: argparse.Namespace) -> int:
    from metalog.storage.log_dirs import format_log_dirs

    dirs = [d for d in args.log_dirs.split(",") if d]
    for d in dirs:
        if os.path.exists(d) and not os.path.isdir(d):
            raise MetalogError(f"{d} is a file, not a log directory")
    done = format_log_dirs(dirs, args.node_id, args.cluster_id, args.ignore_formatted)
    for path, directory_id in done:
        print(f"Formatted {path_text(path)}: directory.id={directory_id}")
    skipped = len(dirs) - len(done)
    if skipped:
        print(f"{skipped} director{'y was' if skipped == 1 else 'ies were'} already formatted and left as they were")
    return 0
