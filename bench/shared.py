"""Shared videos processed once: reelgen's CPU-seconds per item on a catalog where a share of the items are a
product's variants (the same video and main image under other file names, the same title and description as
another item), with shared work on and off, side by side.

The catalog is bench/e2e.py's sample catalog (720p, 15-30 s videos) with --shared of its lines copied as
variants of other items, their files copied under new names (the same bytes). Off (REELGEN_SHARE_WORK=false)
every item is fetched, analysed and rendered, which is what the same catalog with every video distinct costs;
on, a variant's clips are copies of the item it shares with (workers/sharing.py). Rounds alternate on and off.
CPU-seconds are the run's own and its processes' (workers, daemon, Redis), start-up included, per item.

Usage: .venv/bin/python bench/shared.py [--items 10] [--shared 0.3] [--repeats 2]; the last line is JSON, with
shared_over_distinct (CPU-s per item on over off; target about 0.7 or less at a 30 % share).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.e2e import CODEC_THREADS, DATA, children_usage, ensure_catalog  # noqa: E402
from core.settings import load_settings  # noqa: E402
from jobs.intake.catalog_ref import CatalogRef  # noqa: E402
from jobs.local.runner import run_catalog  # noqa: E402
from monitoring.machine import machine_lines  # noqa: E402


def shared_catalog(base: Path, items: int, shared: float) -> tuple[Path, int]:
    """The base catalog's first items - variants lines, then `variants` copies of its first lines under new ids
    and new file names (the same bytes); returns it and the number of variants."""
    lines = [json.loads(line) for line in base.read_text().splitlines() if line.strip()]
    variants = round(items * shared)
    originals = items - variants
    if originals > len(lines) or originals < 1:
        raise SystemExit(f"the base catalog has {len(lines)} items; {originals} originals asked")
    folder = base.parent
    out = folder / f"shared-{items}-{variants}.jsonl"
    with open(out, "w") as handle:
        for entry in lines[:originals]:
            handle.write(json.dumps(entry) + "\n")
        for k in range(variants):
            entry = dict(lines[k % originals])
            for field in ("video", "image"):
                original = folder / entry[field]
                copy = original.with_name(f"variant-{k}-{original.name}")
                if not copy.exists():
                    shutil.copyfile(original, copy)
                entry[field] = str(copy.relative_to(folder))
            handle.write(json.dumps(entry | {"item_id": f"variant-{k}"}) + "\n")
    return out, variants


def run(catalog: Path, work: Path, share: bool) -> tuple[float, float]:
    """(CPU-seconds, wall seconds) of one `reelgen run` of the catalog."""
    shutil.rmtree(work, ignore_errors=True)
    settings = load_settings(
        out=str(work / "out"), state_dir=work / "state", codec_threads=CODEC_THREADS, share_work=share
    )
    before, cpu0, wall0 = children_usage(), time.process_time(), time.perf_counter()
    with open(os.devnull, "w") as quiet:
        outcome = run_catalog(settings, CatalogRef.parse(str(catalog)), stream=quiet)
    after = children_usage()
    if outcome.exit_code != 0:
        raise SystemExit(f"reelgen run exited {outcome.exit_code}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) + time.process_time() - cpu0
    return cpu, time.perf_counter() - wall0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--shared", type=float, default=0.3, help="share of the items that are variants")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    for line in machine_lines():
        print(line)
    originals = args.items - round(args.items * args.shared)
    catalog, variants = shared_catalog(ensure_catalog(originals, args.seed), args.items, args.shared)
    print(f"catalog: {args.items} items, {variants} of them variants of another ({catalog})")
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for r in range(args.repeats):
        for share in (True, False):
            used, wall = run(catalog, DATA / "shared-run", share)
            cpu[share].append(used / args.items)
            print(
                f"round {r + 1}, sharing {'on ' if share else 'off'}: {used / args.items:.2f} CPU-s/item, {wall:.1f} s"
            )
    on, off = statistics.median(cpu[True]), statistics.median(cpu[False])
    ratio = round(on / off, 3)
    print(f"CPU-s per item: shared {on:.2f}, every item its own {off:.2f}: shared_over_distinct {ratio}")
    summary = {
        "items": args.items,
        "variants": variants,
        "cpu_s_per_item_shared": round(on, 3),
        "cpu_s_per_item_distinct": round(off, 3),
        "shared_over_distinct": ratio,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
