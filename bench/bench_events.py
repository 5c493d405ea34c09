"""The events file's CPU per ``hand_finished`` line: the dealer's writer against structlog's chain.

``EventLog`` renders the JSON lines itself (``dealer/events.py``, ``json_line``)
and writes the per-hand lines in batches; before, each line went through
structlog's processor chain (``json_processors``, kept as the reference the
tests compare against) and one write per line. Both write the same bytes; this
times the two, alternating, in CPU time (``time.process_time``), so other load
on the machine moves the figures less than wall time would.

Usage::

    .venv/bin/python bench/bench_events.py [--lines 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from dealer import events as ev


def through_event_log(path: Path, records: list[ev.EventRecord]) -> float:
    """CPU seconds to write ``records`` with the dealer's ``EventLog``."""
    log = ev.EventLog("bench", path)
    start = time.process_time()
    for record in records:
        log.emit(record)
    log.close()
    return time.process_time() - start


def through_structlog(path: Path, records: list[ev.EventRecord]) -> float:
    """CPU seconds to write ``records`` as before: structlog's chain, one write per line."""
    import structlog  # lazy: third-party, the reference writer only

    file = ev.open_record_file(path, False)
    logger = structlog.wrap_logger(structlog.WriteLogger(file),  # type: ignore[arg-type]
                                   processors=ev.json_processors()).bind(match="bench")
    start = time.process_time()
    for record in records:
        getattr(logger, record.LEVEL)(record.EVENT.value, **record.fields())
    file.close()
    return time.process_time() - start


def main() -> int:
    """Time both writers and print µs of CPU per line and their ratio per run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    records: list[ev.EventRecord] = [
        ev.HandFinished(hand=i, betting="r300c/cr900c/r2000f", values=(-900.0, 900.0))
        for i in range(options.lines)]
    per_line: dict[str, list[float]] = {"structlog": [], "EventLog": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(options.runs):
            per_line["structlog"].append(through_structlog(Path(tmp) / "a.jsonl", records) / options.lines)
            per_line["EventLog"].append(through_event_log(Path(tmp) / "b.jsonl", records) / options.lines)
    for name, values in per_line.items():
        print(f"{name:9}: median {statistics.median(values) * 1e6:.1f} µs of CPU per hand_finished line")
    ratios = [a / b for a, b in zip(per_line["structlog"], per_line["EventLog"])]
    print(f"structlog / EventLog: median {statistics.median(ratios):.2f} "
          f"(per run {', '.join(f'{r:.2f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
