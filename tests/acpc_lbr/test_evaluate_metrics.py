"""`acpc-lbr evaluate --metrics-port`: the live estimate on /metrics while it runs."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ACPC_LBR = Path(sys.executable).with_name("acpc-lbr")


def _scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_evaluate_serves_the_running_estimate(tmp_path: Path) -> None:
    """Hands move and the raw/duplicate estimates appear on the loopback endpoint mid-run."""
    proc = subprocess.Popen(
        [str(ACPC_LBR), "evaluate", "--opponent", "always-call", "--hands", "5000",
         "--metrics-port", "0", "--progress-every", "100000", "--out", str(tmp_path)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    try:
        assert proc.stderr is not None
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            found = re.match(r"METRICS (http://127\.0\.0\.1:\d+/metrics)", line)
            url = found.group(1) if found else None
        assert url is not None, "no METRICS line on stderr"
        seen: dict[str, float] = {}
        while time.monotonic() < deadline and proc.poll() is None:
            samples = _scrape(url)
            hands = sum(v for (name, _), v in samples.items() if name == "acpc_hands_total")
            estimates = {dict(labels)["estimator"]: v for (name, labels), v in samples.items()
                         if name == "acpc_estimate_mbb_per_game"}
            if hands > 200 and {"raw", "duplicate"} <= set(estimates):
                seen = {"hands": hands, **estimates}
                matches = {dict(labels)["match"] for (_, labels) in samples if "match" in dict(labels)}
                break
            time.sleep(0.2)
        assert seen, "the estimate never appeared"
        assert seen["hands"] > 200
        assert seen["raw"] > 0  # LBR beats always-call (fcpa, rounds 3-4)
        # The match label is the match's name, not the log folder's path.
        assert matches <= {"lbr-vs-always-call", "lbr-vs-always-call.dup"} and matches
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_quiet_still_says_where_the_metrics_are(tmp_path: Path) -> None:
    """--quiet silences the progress, not the METRICS line: with --metrics-port 0 it is the only
    way to find the endpoint (it was dropped with the progress)."""
    done = subprocess.run(
        [str(ACPC_LBR), "evaluate", "--game", "kuhn", "--opponent", "random", "--hands", "5",
         "--metrics-port", "0", "--quiet", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^METRICS http://127\.0\.0\.1:\d+/metrics$", done.stderr, flags=re.MULTILINE), done.stderr

