"""Replay throughput and point-in-time query speed on a realistic metadata log.

    python benchmarks/replay.py                   # 1M records (the log is built once and cached)
    python benchmarks/replay.py --records 200000  # quicker

Prints: replay rate from offset 0 (records/s on one core: read, CRC, decode, apply), and the
time to answer a point-in-time query near the end of the log from state images versus from
offset 0. Targets: replay >= 200k records/s; the late query >= 20x faster with images.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from metalog.bench.replay import build_log, timed
from metalog.replay.history import IMAGE_DIR, MetadataHistory


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
        full_time, full = timed(lambda: h.state_at(use_snapshots=False), args.repeat)
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
        ("replay from offset 0", f"{full_time:.2f} s  {rate:,.0f} records/s  {size / 1e6 / full_time:.1f} MB/s"),
        ("  target >= 200,000 records/s", "met" if rate >= 200_000 else f"NOT met ({rate / 200_000:.2f}x)"),
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
    print(f"metalog replay benchmark (Python {sys.version.split()[0]}, best of {args.repeat}, CPU time)")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
