"""Controller and brokers together over real directories: commands in, a metadata log out.

A KIP-858 story in a few calls: brokers format their log dirs and register them, topics are
created, brokers reconcile (create folders, report directories, stay fenced until no assignment
mismatches), a disk fails and leadership moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from metalog.codec.messages import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from metalog.codec.messages.broker_registration_request import Feature
from metalog.codec.uuid import Uuid
from metalog.controller.broker import LogDir, assignment_requests, plan_reconciliation, wants_fence
from metalog.controller.commands import Command, Result, SetFeatureLevel
from metalog.controller.controller import Controller
from metalog.errors import MetalogError
from metalog.log import LogConfig, MetadataLog, Mode
from metalog.storage.log_dirs import apply_plan, format_log_dirs, scan_log_dirs

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


@dataclass
class SimBroker:
    id: int
    paths: list[Path]
    rack: str | None
    epoch: int = -1
    offline: set[Path] = field(default_factory=set)

    def dirs(self) -> list[LogDir]:
        return scan_log_dirs(self.paths, self.offline)


class Simulation:
    def __init__(self, root: Path, *, metadata_version: int = 21, seed: int = 0) -> None:
        self.root = Path(root)
        self.log = MetadataLog.open(self.root / "controller", Mode.CREATE, config=LogConfig(cluster_id=CLUSTER_ID))
        self.controller = Controller(self.log, cluster_id=CLUSTER_ID, seed=seed)
        self.brokers: dict[int, SimBroker] = {}
        self.must(SetFeatureLevel("metadata.version", metadata_version))

    def close(self) -> None:
        self.log.close()

    def must(self, command: Command) -> Result:
        result = self.controller.submit(command)
        if not result.ok:
            raise MetalogError(f"{type(command).__name__} refused: {result.error_message}")
        return result

    def add_broker(self, broker_id: int, n_dirs: int, rack: str | None = None) -> SimBroker:
        """Format the broker's dirs and register them; the broker starts fenced."""
        paths = [self.root / f"broker{broker_id}" / f"d{i}" for i in range(n_dirs)]
        format_log_dirs(paths, broker_id, CLUSTER_ID)
        b = self.brokers[broker_id] = SimBroker(broker_id, paths, rack)
        req = BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=CLUSTER_ID, incarnation_id=Uuid.of(broker_id, 1), rack=rack,
            log_dirs=[d.id for d in b.dirs()], features=[_feature(1, 29)])
        response = self.must(req).response
        assert isinstance(response, BrokerRegistrationResponse)
        b.epoch = response.broker_epoch
        return b

    def reconcile(self, broker_id: int) -> int:
        """One round of the broker's loop: plan, create, report, heartbeat. Returns the reports sent."""
        b = self.brokers[broker_id]
        dirs = b.dirs()
        reports = apply_plan(plan_reconciliation(self.controller.image, broker_id, dirs), dirs)
        for req in assignment_requests(broker_id, b.epoch, reports):
            self.must(req)
        self.heartbeat(broker_id)
        return len(reports)

    def heartbeat(self, broker_id: int) -> BrokerHeartbeatResponse:
        b = self.brokers[broker_id]
        dirs = b.dirs()
        req = BrokerHeartbeatRequest(
            broker_id=broker_id, broker_epoch=b.epoch, current_metadata_offset=self.controller.loader.offset,
            want_fence=wants_fence(self.controller.image, broker_id, dirs),
            offline_log_dirs=[d.id for d in dirs if not d.online])
        response = self.must(req).response
        assert isinstance(response, BrokerHeartbeatResponse)
        return response

    def fail_dir(self, broker_id: int, index: int) -> None:
        """A disk fails: the broker reports it offline in its next heartbeat."""
        b = self.brokers[broker_id]
        b.offline.add(b.paths[index].resolve())
        self.heartbeat(broker_id)

    def settle(self, rounds: int = 3) -> None:
        for _ in range(rounds):
            for broker_id in sorted(self.brokers):
                self.reconcile(broker_id)


def _feature(lo: int, hi: int) -> Feature:
    return Feature(name="metadata.version", min_supported_version=lo, max_supported_version=hi)
