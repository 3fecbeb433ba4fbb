"""``storage_info``: kafka-storage info's findings (StorageTool.infoCommand, MetaProperties.Builder,
MetaPropertiesEnsemble.verify), and each directory's id, metadata log and bootstrap metadata."""

from __future__ import annotations

from pathlib import Path

from metalog.log import files
from metalog.snapshots.bootstrap import BOOTSTRAP_FILE, write_bootstrap
from metalog.state.features import bootstrap_records
from metalog.storage.info import storage_info
from metalog.storage.log_dirs import format_log_dirs

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def props(path: Path, text: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / files.META_PROPERTIES).write_text(text)
    return path


def test_formatted_directories_and_their_metadata(tmp_path: Path) -> None:
    done = dict(format_log_dirs([tmp_path / "b", tmp_path / "a"], 4, CLUSTER, bootstrap=bootstrap_records(21)))
    info = storage_info([tmp_path / "b", tmp_path / "a"])
    assert [d.path for d in info.directories] == [str(tmp_path / "a"), str(tmp_path / "b")]  # Kafka sorts them
    assert info.problems == []
    assert info.metadata == {"cluster.id": CLUSTER, "directory.id": str(done[tmp_path / "a"]), "node.id": "4",
                             "version": "1"}
    b = info.directories[1]
    assert b.properties is not None and b.properties["directory.id"] == str(done[tmp_path / "b"])
    assert b.bootstrap is not None and b.bootstrap.features == {"metadata.version": 21}
    assert b.bootstrap.metadata_version == "3.9-IV0" and not b.metadata_log


def test_kafkas_problems(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    props(tmp_path / "v1", f"version=1\ncluster.id={CLUSTER}\nnode.id=1\n")
    props(tmp_path / "other", "version=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\nnode.id=1\n")
    props(tmp_path / "nonode", f"version=1\ncluster.id={CLUSTER}\n")
    info = storage_info([tmp_path / n for n in ("v1", "missing", "file", "empty", "other", "nonode")])
    assert info.problems == [
        f"{tmp_path / 'empty'} is not formatted.",
        f"{tmp_path / 'file'} is not a directory",
        f"{tmp_path / 'missing'} does not exist",
        f"Error loading {tmp_path / 'nonode' / 'meta.properties'}: node.id was not found.",
        "Mismatched cluster IDs between storage directories.",
    ]
    assert info.metadata is not None and info.metadata["cluster.id"] == "AAAAAAAAAAAAAAAAAAAAAA"  # "other" sorts first


def test_mismatched_node_ids_and_directory_ids(tmp_path: Path) -> None:
    same = "version=1\ncluster.id={c}\nnode.id={n}\ndirectory.id={d}\n"
    props(tmp_path / "a", same.format(c=CLUSTER, n=1, d="upjfkCrUR9GNn1i94ip1wg"))
    props(tmp_path / "b", same.format(c=CLUSTER, n=2, d="upjfkCrUR9GNn1i94ip1wg"))
    props(tmp_path / "c", same.format(c=CLUSTER, n=1, d="AAAAAAAAAAAAAAAAAAAAAQ"))  # UNASSIGNED
    info = storage_info([tmp_path / n for n in "abc"])
    assert info.problems == [
        "Mismatched node IDs between storage directories.",
        f"directory.id upjfkCrUR9GNn1i94ip1wg is the id of {tmp_path / 'a'} and of {tmp_path / 'b'}",
        f"{tmp_path / 'c'} has the reserved directory.id AAAAAAAAAAAAAAAAAAAAAQ",
    ]


def test_meta_properties_that_do_not_load(tmp_path: Path) -> None:
    props(tmp_path / "v9", "version=9\n")
    props(tmp_path / "badid", f"version=1\ncluster.id={CLUSTER}\nnode.id=x\n")
    props(tmp_path / "baddir", f"version=1\ncluster.id={CLUSTER}\nnode.id=1\ndirectory.id=nope\n")
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / files.META_PROPERTIES).write_bytes(b"\xff\xfe")
    props(tmp_path / "zk", "version=0\nbroker.id=5\n")  # a ZooKeeper broker's: version 0 needs no cluster.id
    info = storage_info([tmp_path / n for n in ("v9", "badid", "baddir", "binary", "zk")])
    lines = [p.replace(str(tmp_path) + "/", "") for p in info.problems]
    assert lines[0] == "Error loading baddir/meta.properties: Unable to read directory.id as a Uuid: a Uuid is 22 " \
                       "characters of url-safe base64, not 'nope'"
    assert lines[1] == "Error loading badid/meta.properties: node.id is not an integer: 'x'"
    assert lines[2].startswith("Error loading binary/meta.properties: 'utf-8' codec can't decode")
    assert lines[3] == "Error loading v9/meta.properties: Unknown meta.properties version '9'"
    assert len(lines) == 4 and info.metadata == {"broker.id": "5", "version": "0"}


def test_the_metadata_log_and_a_bootstrap_file_that_does_not_read(tmp_path: Path) -> None:
    format_log_dirs([tmp_path / "m"], 1, CLUSTER)
    (tmp_path / "m" / files.METADATA_PARTITION_DIR).mkdir()
    write_bootstrap(tmp_path / "m", bootstrap_records(21)[1:] or [], time_ms=1)  # no metadata.version record
    info = storage_info([tmp_path / "m"])
    d = info.directories[0]
    assert d.metadata_log and d.bootstrap is not None and d.bootstrap.features == {}
    assert info.problems == [f"{tmp_path / 'm' / BOOTSTRAP_FILE}: no FeatureLevelRecord for metadata.version "
                             "(Kafka refuses it)"]
