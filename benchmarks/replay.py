"""Replay throughput and point-in-time query speed on a realistic metadata log.

    python benchmarks/replay.py                   # 1M records (the log is built once and cached)
    python benchmarks/replay.py --records 200000  # quicker

Prints: replay rate from offset 0 (records/s on one core: read, CRC, decode, apply), on the compiled log core
and, in the same run (the rounds alternating), on the pure Python one, and the time to answer a point-in-time
query near the end of the log from state images versus from offset 0. Targets: replay >= 1,000,000 records/s on
the compiled log core (about Kafka's own warmed-up loader on this log) and >= 2x the pure log core; the late
query >= 20x faster with images.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from metalog.bench.cores import compiled_log_core, log_status, pure_log_core
from metalog.bench.replay import build_log, timed
from metalog.replay.history import MetadataHistory
from metalog.replay.images import IMAGE_DIR


def _restore_times(h: MetadataHistory, image: object, repeat: int) -> tuple[float, float]:
    """Time loading the same state from a Kafka checkpoint and from a state image."""
    from metalog.codec.framing import decode_metadata_record
    from metalog.snapshots import SnapshotId, SnapshotReader, SnapshotWriter
    from metalog.state import MetadataLoader
    from metalog.state.records import image_records
    from metalog.state.serde import image_from_bytes, image_to_bytes

    directory = h.root / "bench-snapshot"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    with SnapshotWriter(directory, SnapshotId(h.end_offset + 1, 1), last_contained_log_timestamp=0) as w:
        w.append(image_records(image))  # type: ignore[arg-type]
        path = w.freeze()
    data = image_to_bytes(image)  # type: ignore[arg-type]

    def from_checkpoint() -> object:
        records = (decode_metadata_record(r.value).message for r in SnapshotReader(path).records())
        return MetadataLoader().load_snapshot(records, h.end_offset)

    checkpoint_time, _ = timed(from_checkpoint, repeat)
    image_time, _ = timed(lambda: image_from_bytes(data), repeat)
    shutil.rmtree(directory)
    return checkpoint_time, image_time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/metalog-bench"))
    ap.add_argument("--image-every", type=int, default=25_000, help="offsets between state images")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    path = args.workdir / f"replay-{args.records}-{args.seed}"
    if not (path / "__cluster_metadata-0").is_dir():
        shutil.rmtree(path, ignore_errors=True)
        print(f"building a {args.records:,}-record log in {path} ...", file=sys.stderr)
        t = time.perf_counter()
        kinds = build_log(path, args.records, args.seed)
        print(f"  built in {time.perf_counter() - t:.1f}s: " +
              ", ".join(f"{k} {v / sum(kinds.values()):.0%}" for k, v in kinds.most_common(5)), file=sys.stderr)
    shutil.rmtree(path / IMAGE_DIR, ignore_errors=True)

    with MetadataHistory(path) as h:
        end = h.end_offset
        size = h.log.size_in_bytes

        def pure_replay() -> object:
            with pure_log_core():
                return h.state_at(use_snapshots=False)

        full_time = pure_time = float("inf")
        for _ in range(args.repeat):  # the two cores alternate, so load from elsewhere hits them alike
            seconds, full = timed(lambda: h.state_at(use_snapshots=False), 1)
            full_time = min(full_time, seconds)
            if compiled_log_core():
                seconds, pure = timed(pure_replay, 1)
                pure_time = min(pure_time, seconds)
                assert pure.image == full.image  # type: ignore[attr-defined]
        replayed = full.records_replayed  # type: ignore[attr-defined]

        t = time.perf_counter()
        h.write_images(args.image_every)
        images_time = time.perf_counter() - t

        load_checkpoint, load_image = _restore_times(h, full.image, args.repeat)  # type: ignore[attr-defined]

        target = max(end - 1000, 0)
        zero_time, _ = timed(lambda: h.state_at(target, use_snapshots=False), args.repeat)
        image_time, with_images = timed(lambda: h.state_at(target), args.repeat)
        start = with_images.start  # type: ignore[attr-defined]

    rate = replayed / full_time
    rows = [
        ("log", f"{end + 1:,} offsets, {size / 1e6:.1f} MB"),
        (f"replay from offset 0 ({log_status().split(' (')[0]} log core)",
         f"{full_time:.2f} s  {rate:,.0f} records/s  {size / 1e6 / full_time:.1f} MB/s"),
        ("  target >= 1,000,000 records/s", "met" if rate >= 1_000_000 else f"NOT met ({rate / 1_000_000:.2f}x)"),
    ]
    if compiled_log_core():
        rows += [
            ("replay from offset 0 (pure log core)", f"{pure_time:.2f} s  {replayed / pure_time:,.0f} records/s  "
                                                     f"{size / 1e6 / pure_time:.1f} MB/s"),
            ("  compiled / pure (target >= 2x)", f"{pure_time / full_time:.2f}x " +
             ("met" if pure_time / full_time >= 2 else "NOT met")),
        ]
    rows += [
        ("write state images (one pass)", f"every {args.image_every:,} offsets: {images_time:.2f} s"),
        (f"query at offset {target:,} from 0", f"{zero_time * 1000:,.0f} ms"),
        (f"query at offset {target:,} with images", f"{image_time * 1000:,.0f} ms (from {start.kind} at "
                                                     f"{start.offset:,})"),
        ("restore the final state from a .checkpoint", f"{load_checkpoint * 1000:,.0f} ms"),
        ("restore it from a state image", f"{load_image * 1000:,.0f} ms ({load_checkpoint / load_image:.1f}x faster)"),
        ("  speed-up (target >= 20x)", f"{zero_time / image_time:.1f}x " +
         ("met" if zero_time / image_time >= 20 else "NOT met")),
    ]
    width = max(len(r[0]) for r in rows)
    load = os.getloadavg()
    print(f"metalog replay benchmark (Python {sys.version.split()[0]}, best of {args.repeat}, CPU time; log core: "
          f"{log_status()}; load average {load[0]:.1f} on {os.cpu_count()} cores)")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
