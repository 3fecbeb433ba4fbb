"""A KIP-858 story played end to end over real directories and a real metadata log."""

from __future__ import annotations

from pathlib import Path

from metalog.codec.framing import decode_metadata_record
from metalog.codec.uuid import Uuid
from metalog.controller.broker import mismatching_assignments
from metalog.log import MetadataLog
from metalog.state.loader import MetadataLoader
from metalog.state.records import image_digest
from metalog.storage.simulation import Simulation


def test_kip858_story(tmp_path: Path) -> None:
    sim = Simulation(tmp_path, seed=1)
    try:
        for broker_id, n_dirs, rack in ((1, 3, "a"), (2, 2, "b"), (3, 1, "c")):
            sim.add_broker(broker_id, n_dirs, rack)
        sim.settle(1)
        assert not any(b.fenced for b in sim.controller.image.brokers.values())
        assert sim.controller.create_topic("foo", 6, 3).ok and sim.controller.create_topic("bar", 3, 2).ok
        image = sim.controller.image
        one_dir = {p.directory(3) for t in image.topics.values() for p in t.partitions.values() if 3 in p.replicas}
        assert one_dir == {sim.brokers[3].dirs()[0].id}  # a single dir is assigned at creation
        sim.settle(2)
        image = sim.controller.image
        # every replica assigned to a real directory of its broker, whose folder exists there
        for topic in image.topics.values():
            for pid, p in topic.partitions.items():
                for r in p.replicas:
                    d = next(d for d in sim.brokers[r].dirs() if d.id == p.directory(r))
                    assert (d.path / f"{topic.name}-{pid}").is_dir()
        assert all(mismatching_assignments(image, b, sim.brokers[b].dirs()) == 0 for b in sim.brokers)
        assert not any(b.fenced for b in image.brokers.values())

        # broker 1's first disk fails
        failed = sim.brokers[1].dirs()[0].id
        sim.fail_dir(1, 0)
        image = sim.controller.image
        hit = [(t.name, pid) for t in image.topics.values() for pid, p in t.partitions.items()
               if 1 in p.replicas and p.directory(1) == failed]
        assert len(hit) >= 2  # the failed disk held replicas (least-loaded placement spreads them)
        assert failed not in image.brokers[1].directories and len(image.brokers[1].directories) == 2
        for topic in image.topics.values():
            for pid, p in topic.partitions.items():
                on_failed = 1 in p.replicas and p.directory(1) == failed
                assert (image.offline_replicas(p) == [1]) == on_failed, (topic.name, pid)
                if on_failed:
                    assert p.leader != 1 and 1 not in p.isr and p.leader in p.isr
        # the broker does not refill its remaining disks with the failed disk's replicas
        assert sim.reconcile(1) == 0
    finally:
        sim.close()

    # the log alone replays to the controller's state
    with MetadataLog.open(tmp_path / "controller") as log:
        loader = MetadataLoader()
        loader.replay_all((rec.offset, decode_metadata_record(rec.value).message) for rec in log.records())
    assert image_digest(loader.image) == image_digest(sim.controller.image)
    assert isinstance(next(iter(loader.image.topics)), Uuid)
    # the simulation writes through the controller: no batch with records after an abort (log verify warns)
    from metalog.log.verify import verify_log

    assert verify_log(tmp_path / "controller").warnings == []
