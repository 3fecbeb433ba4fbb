"""Metadata-log throughput: reading a 1M-record log (CRC checked) against kafka-python's and aiokafka's batch
readers, appending with and without an fsync per batch, and the peak memory of dumping the whole log.

    python benchmarks/log.py                    # 1M records (about two minutes on 2 cores; most is the dump)
    python benchmarks/log.py --no-dump          # without the 1M-record dump (about 40 s)
    python benchmarks/log.py --records 100000   # quicker

The log holds KRaft batches of 1000 metadata records (a mix of PartitionRecord, PartitionChangeRecord,
RegisterBrokerRecord, TopicRecord and ConfigRecord values, 20-200 bytes). Every reader checks every
batch's CRC and touches every record's value; they must agree on the record count and a checksum of the
values before anything is compared. kafka-python and aiokafka read from a bytes object (they cannot
stream a file); metalog streams from the segment files (which costs mapping the file's pages: about half a
millisecond per 13 MB here), and scans the same bytes in memory as they do. Read rates are CPU time of this
process, best of ``--repeat`` interleaved rounds (the 2-core machine is shared, so wall time varies 2-3x from
run to run); append rates are wall time, since they include the fsyncs.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from metalog.bench.cores import compiled_log_core, pure_log_core
from metalog.bench.log import (
    BATCH,
    make_log,
    peer_reader,
    peer_scan,
    read_metalog,
    scan_in_memory,
    scan_metalog,
    values_pool,
)
from metalog.bench.timing import best_cpu as best
from metalog.log import Durability

_MEASURED_DUMP = (
    "import sys\n"
    "from metalog.cli.main import main\n"
    "rc = main(sys.argv[1:])\n"
    "hwm = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
    "print(hwm, file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def dump_peak_rss(path: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of ``metalog log dump --json`` over the whole log, output discarded.

    The child reads its own VmHWM: ru_maxrss would carry this (large) process's peak across the exec.
    """
    cmd = [sys.executable, "-c", _MEASURED_DUMP, "log", "dump", "--json", str(path)]
    t = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        done = subprocess.run(cmd, stdout=devnull, stderr=subprocess.PIPE, text=True, check=True)
    return time.perf_counter() - t, int(done.stderr.split()[-1]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-dump", action="store_true", help="skip the dump memory measurement")
    args = ap.parse_args()

    from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
    from kafka.record.memory_records import MemoryRecords as KafkaPythonMemoryRecords

    n = args.records
    tmp = Path(tempfile.mkdtemp(prefix="metalog-bench-"))
    try:
        append_nofsync = make_log(tmp / "nofsync", n, Durability.NONE)
        append_fsync = make_log(tmp / "fsync", n, Durability.BATCH)
        log_dir = tmp / "fsync"
        seg_files = sorted((log_dir / "__cluster_metadata-0").glob("*.log"))
        data = b"".join(p.read_bytes() for p in seg_files)
        size = len(data)
        expected_check = sum(len(v) for v in values_pool()) * (n // 1000) + sum(
            len(v) for v in values_pool()[: n % 1000])

        def pure(fn: Callable[[], tuple[int, int]]) -> Callable[[], tuple[int, int]]:
            def run() -> tuple[int, int]:
                with pure_log_core():
                    return fn()
            return run

        readers = [
            ("metalog records (stream from files)", lambda: read_metalog(log_dir)),
            ("kafka-python DefaultRecordBatch", lambda: peer_reader(KafkaPythonMemoryRecords)(data)),
            ("aiokafka DefaultRecordBatch (compiled)", lambda: peer_reader(AioMemoryRecords)(data)),
            ("metalog batch scan (CRC, lazy records)", lambda: scan_metalog(log_dir)),
            ("kafka-python batch scan (CRC)", lambda: peer_scan(KafkaPythonMemoryRecords)(data)),
            ("aiokafka batch scan (CRC, compiled)", lambda: peer_scan(AioMemoryRecords)(data)),
            ("metalog batch scan in memory (as the peers)", lambda: scan_in_memory(data)),
        ]
        if compiled_log_core():
            readers += [("metalog records, pure log core", pure(readers[0][1])),
                        ("metalog batch scan, pure log core", pure(readers[3][1])),
                        ("metalog scan in memory, pure log core", pure(readers[6][1]))]
        # Rounds interleave the readers, so that load from elsewhere on the machine hits them alike.
        timings: dict[str, float] = {}
        for _ in range(args.repeat):
            for name, fn in readers:
                seconds, result = best(fn, 1)
                if result[0] != n or result[1] not in (expected_check, -1):
                    raise SystemExit(f"{name} disagrees: {result} (expected {n} records, checksum {expected_check})")
                timings[name] = min(seconds, timings.get(name, seconds))
        rows = [(name, timings[name], (n, 0)) for name, _ in readers]

        print(f"\nmetadata log: {n:,} records in {n // BATCH:,} batches, {size / 1e6:.1f} MB, "
              f"{len(seg_files)} segment(s); crc32 of the bytes {zlib.crc32(data):08x}\n")
        print(f"{'read (every CRC checked)':44} {'records/s':>12} {'MB/s':>8}  metalog's rate / this one's")
        base = {"records": rows[0][1], "scan": rows[3][1]}
        for name, seconds, _ in rows:
            ref = base["scan"] if "scan" in name else base["records"]
            print(f"{name:44} {n / seconds:>12,.0f} {size / seconds / 1e6:>8.1f}  {seconds / ref:.2f}x")
        print()
        print(f"{'append (batches of 1000, epoch 1)':44} {'records/s':>12} {'MB/s':>8}")
        for name, seconds in [("metalog, fsync after every batch", append_fsync),
                              ("metalog, no fsync (flush at close)", append_nofsync)]:
            print(f"{name:44} {n / seconds:>12,.0f} {size / seconds / 1e6:>8.1f}")
        kp, aio = rows[1][1], rows[2][1]
        print()
        scan_kp = rows[4][1] / rows[6][1]
        print(f"targets: read >= 3x kafka-python: {kp / rows[0][1]:.2f}x "
              f"({'met' if kp / rows[0][1] >= 3 else 'MISSED'}); "
              f">= 0.75x aiokafka (aim 1x): {aio / rows[0][1]:.2f}x "
              f"({'met' if aio / rows[0][1] >= 0.75 else 'MISSED'}); "
              f"batch scan in memory >= 1x kafka-python's: {scan_kp:.2f}x ({'met' if scan_kp >= 1 else 'MISSED'}); "
              f"batch scan vs aiokafka's: {rows[5][1] / rows[3][1]:.2f}x")
        if not args.no_dump:
            small = tmp / "small"
            make_log(small, max(n // 10, BATCH), Durability.NONE)
            s_small, rss_small = dump_peak_rss(small)
            s_full, rss_full = dump_peak_rss(log_dir)
            print(f"dump --json: {max(n // 10, BATCH):,} records {s_small:.1f} s, peak RSS {rss_small:.0f} MiB; "
                  f"{n:,} records {s_full:.1f} s, peak RSS {rss_full:.0f} MiB "
                  f"({'constant' if rss_full < rss_small * 1.2 + 5 else 'GROWS'}); "
                  f"this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
