"""Replay throughput and point-in-time query speed on realistic metadata logs.

    python benchmarks/replay.py                           # 1M and 3M records (each log built once and cached)
    python benchmarks/replay.py --records 200000          # quicker
    python benchmarks/replay.py --instructions 200000     # and instruction counts on a 200k log (valgrind)

Prints, for each log: the replay rate from offset 0 (records/s on one core: read, CRC, decode, apply) on the
compiled core and, in the same run (the rounds alternating), on the pure Python one, with their ratio; and the
CPU time of a cold ``metalog replay --no-snapshots`` (a fresh process, imports included) on both cores. For the
first log also the time to answer a point-in-time query near the end from state images versus from offset 0.
Targets: replay >= 6.6x the pure core in the same run (where Kafka's own loader catching up, in <= 8 MiB chunks,
stood: 5.45-5.83x metalog's pure core in issue #27's runs, and 1.2x that), the pure core no slower than before;
the late query >= 20x faster with images. With ``--instructions N``, also the instructions of one warm replay from
offset 0 of an N-record log on each core (valgrind's callgrind, collecting inside that replay only): steady where
CPU times are not, on a machine shared with other work.
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
from pathlib import Path

from metalog.bench.cores import compiled_log_core, log_status, pure_log_core
from metalog.bench.replay import build_log, timed
from metalog.codec import core
from metalog.replay.history import MetadataHistory
from metalog.replay.images import IMAGE_DIR


def _restore_times(h: MetadataHistory, image: object, repeat: int) -> tuple[float, float]:
    """Time loading the same state from a Kafka checkpoint and from a state image."""
    from metalog.codec.framing import decode_metadata_record
    from metalog.snapshots import SnapshotHeader, SnapshotId, SnapshotReader, SnapshotWriter
    from metalog.state import MetadataLoader
    from metalog.state.records import image_records
    from metalog.state.serde import image_from_bytes, image_to_bytes

    directory = h.root / "bench-snapshot"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    header = SnapshotHeader(last_contained_log_timestamp=0)
    with SnapshotWriter(directory, SnapshotId(h.end_offset + 1, 1), header) as w:
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


def _log(workdir: Path, records: int, seed: int) -> Path:
    """The cached generated log of ``records`` records (built on first use)."""
    path = workdir / f"replay-{records}-{seed}"
    if not (path / "__cluster_metadata-0").is_dir():
        shutil.rmtree(path, ignore_errors=True)
        print(f"building a {records:,}-record log in {path} ...", file=sys.stderr)
        t = time.perf_counter()
        kinds = build_log(path, records, seed)
        print(f"  built in {time.perf_counter() - t:.1f}s: " +
              ", ".join(f"{k} {v / sum(kinds.values()):.0%}" for k, v in kinds.most_common(5)), file=sys.stderr)
    shutil.rmtree(path / IMAGE_DIR, ignore_errors=True)
    return path


# the installed ``metalog`` command beside this interpreter (else the same entry point through it)
_SCRIPT = shutil.which("metalog", path=str(Path(sys.executable).parent))
_METALOG = [_SCRIPT] if _SCRIPT else [sys.executable, "-c",
                                      "from metalog.cli.main import main; raise SystemExit(main())"]


def _cold_cli(path: Path, pure: bool, repeat: int) -> float:
    """Best CPU time (user + system) of a fresh ``metalog replay --no-snapshots`` process: a CLI's cold run."""
    env = {**os.environ, core.PURE_ENV: "1" if pure else "0"}
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([*_METALOG, "replay", str(path), "--no-snapshots"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def _replay_rows(path: Path, repeat: int) -> tuple[list[tuple[str, str]], object]:
    """Replay from offset 0 on both cores, alternating, and cold from the CLI: the rows, and the final state."""
    with MetadataHistory(path) as h:
        end, size = h.end_offset, h.log.size_in_bytes

        def pure_replay() -> object:
            with pure_log_core():
                return h.state_at(use_snapshots=False)

        full_time = pure_time = float("inf")
        for _ in range(repeat):  # the two cores alternate, so load from elsewhere hits them alike
            seconds, full = timed(lambda: h.state_at(use_snapshots=False), 1)
            full_time = min(full_time, seconds)
            if compiled_log_core():
                seconds, pure = timed(pure_replay, 1)
                pure_time = min(pure_time, seconds)
                assert pure.image == full.image  # type: ignore[attr-defined]
        replayed = full.records_replayed  # type: ignore[attr-defined]
    rate = replayed / full_time
    which = log_status().split(" (")[0]
    rows = [
        ("log", f"{end + 1:,} offsets, {size / 1e6:.1f} MB"),
        (f"replay from offset 0 ({which} core)",
         f"{full_time:.3f} s  {rate:,.0f} records/s  {size / 1e6 / full_time:.1f} MB/s"),
    ]
    if compiled_log_core():
        ratio = pure_time / full_time
        rows += [
            ("replay from offset 0 (pure core)", f"{pure_time:.3f} s  {replayed / pure_time:,.0f} records/s  "
                                                 f"{size / 1e6 / pure_time:.1f} MB/s"),
            ("  compiled / pure (target >= 6.6x)", f"{ratio:.2f}x " + ("met" if ratio >= 6.6 else "NOT met")),
        ]
    cold = _cold_cli(path, False, repeat)
    rows.append((f"cold metalog replay --no-snapshots ({which} core)", f"{cold:.2f} s CPU"))
    if compiled_log_core():
        cold_pure = _cold_cli(path, True, repeat)
        rows.append(("cold metalog replay --no-snapshots (pure core)",
                     f"{cold_pure:.2f} s CPU ({cold_pure / cold:.2f}x the compiled core's)"))
    return rows, full.image  # type: ignore[attr-defined]


# one warm replay from offset 0, run inside functools.reduce so that callgrind collects it alone
# (--collect-atstart=no --toggle-collect=functools_reduce); argv: the log, and "pure" or "compiled"
_COUNTED = """
import sys
from contextlib import nullcontext
from functools import reduce

from metalog.bench.cores import pure_log_core
from metalog.replay.history import MetadataHistory

with MetadataHistory(sys.argv[1]) as h, (pure_log_core() if sys.argv[2] == "pure" else nullcontext()):
    h.state_at(use_snapshots=False)
    reduce(lambda _, __: h.state_at(use_snapshots=False), [0, 0])
"""


def _instructions(path: Path, core_name: str) -> int:
    """The instructions callgrind counts in ``_COUNTED``'s replay of ``path`` on the core named."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (callgrind) on the PATH")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run([valgrind, "--tool=callgrind", "--cache-sim=no", "--collect-atstart=no",
                        "--toggle-collect=functools_reduce", f"--callgrind-out-file={out}", sys.executable, "-c",
                        _COUNTED, str(path), core_name], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit(f"callgrind wrote no total for the {core_name} core")


def _instruction_rows(path: Path) -> list[tuple[str, str]]:
    """Instructions of one warm replay from offset 0 on each core, and their ratio."""
    compiled = _instructions(path, "compiled")
    rows = [("instructions of one replay from offset 0 (compiled)", f"{compiled / 1e6:,.1f}M")]
    if compiled_log_core():
        pure = _instructions(path, "pure")
        rows += [("instructions of one replay from offset 0 (pure)", f"{pure / 1e6:,.1f}M"),
                 ("  compiled / pure in instructions", f"{pure / compiled:.2f}x")]
    return rows


def _query_rows(path: Path, image: object, every: int, repeat: int) -> list[tuple[str, str]]:
    """State images: writing them, a late query with and without them, restoring the final state."""
    with MetadataHistory(path) as h:
        end = h.end_offset
        t = time.perf_counter()
        h.write_images(every)
        images_time = time.perf_counter() - t
        load_checkpoint, load_image = _restore_times(h, image, repeat)
        target = max(end - 1000, 0)
        zero_time, _ = timed(lambda: h.state_at(target, use_snapshots=False), repeat)
        image_time, with_images = timed(lambda: h.state_at(target), repeat)
        start = with_images.start  # type: ignore[attr-defined]
    shutil.rmtree(path / IMAGE_DIR, ignore_errors=True)
    return [
        ("write state images (one pass)", f"every {every:,} offsets: {images_time:.2f} s"),
        (f"query at offset {target:,} from 0", f"{zero_time * 1000:,.0f} ms"),
        (f"query at offset {target:,} with images", f"{image_time * 1000:,.0f} ms (from {start.kind} at "
                                                     f"{start.offset:,})"),
        ("restore the final state from a .checkpoint", f"{load_checkpoint * 1000:,.0f} ms"),
        ("restore it from a state image", f"{load_image * 1000:,.0f} ms ({load_checkpoint / load_image:.1f}x faster)"),
        ("  speed-up (target >= 20x)", f"{zero_time / image_time:.1f}x " +
         ("met" if zero_time / image_time >= 20 else "NOT met")),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, nargs="+", default=[1_000_000, 3_000_000], help="the logs' sizes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/metalog-bench"))
    ap.add_argument("--image-every", type=int, default=25_000, help="offsets between state images")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--instructions", type=int, metavar="N",
                    help="also count the instructions of a replay of an N-record log on each core (valgrind)")
    args = ap.parse_args()

    load_before = os.getloadavg()[0]
    sections = []
    for i, records in enumerate(args.records):
        path = _log(args.workdir, records, args.seed)
        rows, image = _replay_rows(path, args.repeat)
        if i == 0:
            rows += _query_rows(path, image, args.image_every, args.repeat)
        sections.append(rows)
    if args.instructions:
        path = _log(args.workdir, args.instructions, args.seed)
        sections.append([("log", f"{args.instructions:,} records"), *_instruction_rows(path)])
    load = os.getloadavg()[0]
    print(f"metalog replay benchmark (Python {sys.version.split()[0]}, best of {args.repeat}, CPU time; log core: "
          f"{log_status()}; load average {load_before:.1f} before, {load:.1f} after, on {os.cpu_count()} cores)")
    width = max(len(r[0]) for rows in sections for r in rows)
    for rows in sections:
        for k, v in rows:
            print(f"  {k:<{width}}  {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
