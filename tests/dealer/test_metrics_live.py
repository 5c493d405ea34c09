"""A live loopback match: /metrics moves while it plays, and its results JSON is reproduced from files."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from acpc_lbr.cli.results import main as results_main

ACPC_LBR = Path(sys.executable).parent / "acpc-lbr"
TIMEOUT = 120.0


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return _samples(response.read().decode())


def test_live_match_metrics_and_results(tmp_path: Path) -> None:
    """Hands, responses, queries and the running estimate appear and grow during a match; the
    endpoint is on loopback only and keeps the final values for --metrics-grace after the
    SCORE; ``acpc-lbr results`` reproduces the dealer's estimators."""
    hands = 600
    err = open(tmp_path / "dealer.err", "w")  # noqa: SIM115 (held by the subprocess)
    dealer = subprocess.Popen(
        [str(ACPC_LBR), "dealer", "live", "leduc", str(hands), "11", "lbr", "bot", "-q",
         "--metrics-port", "0", "--metrics-grace", "3", "--results-json", "live.json", "--io"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=err, text=True,
    )
    bots: list[subprocess.Popen[bytes]] = []
    try:
        assert dealer.stdout is not None
        ports = [int(p) for p in dealer.stdout.readline().split()]
        metrics_line = next(line for line in (tmp_path / "dealer.err").read_text().splitlines()
                            if line.startswith("METRICS "))
        url = metrics_line.split()[1]
        host, port = re.fullmatch(r"http://([\d.]+):(\d+)/metrics", url).groups()  # type: ignore[union-attr]
        assert host == "127.0.0.1"
        for bot, seat_port in zip(("random", "call-raise"), ports):
            bots.append(subprocess.Popen(
                [str(ACPC_LBR), "play", bot, "127.0.0.1", str(seat_port), "--game", "leduc", "--seed", "3"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        hands_key = ("acpc_hands_total", (("match", "live"),))
        estimate_key = ("acpc_estimate_mbb_per_game", (("estimator", "io"), ("match", "live")))
        seen: list[float] = []
        estimate_seen = False
        deadline = time.monotonic() + TIMEOUT
        while dealer.poll() is None and time.monotonic() < deadline:
            try:
                samples = _scrape(url)
            except OSError:
                break  # the dealer stopped between poll() and the scrape
            played = samples.get(hands_key, 0.0)
            if 0 < played < hands:
                seen.append(played)
                estimate_seen = estimate_seen or estimate_key in samples
                if len(seen) >= 3 and seen[-1] > seen[0] and estimate_seen:
                    response = samples[("acpc_response_seconds_count", (("match", "live"), ("seat", "bot")))]
                    queries = samples[("acpc_queries_total", (("match", "live"), ("seat", "bot")))]
                    assert response > 0 and queries > 0
                    assert samples[("acpc_matches_running", ())] == 1
                    assert samples[("acpc_seat_chips", (("match", "live"), ("seat", "lbr")))] == -samples[
                        ("acpc_seat_chips", (("match", "live"), ("seat", "bot")))]
                    break
            time.sleep(0.05)
        assert len(seen) >= 3 and seen[-1] > seen[0], seen
        assert estimate_seen
        # Not reachable on another interface of this machine (if it has one).
        addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
        for address in addresses:
            if not address.startswith("127."):
                with socket.socket() as probe:
                    probe.settimeout(1.0)
                    assert probe.connect_ex((address, int(port))) != 0
        # The match is over (SCORE printed); the endpoint keeps the final values for the grace.
        score = ""
        while not score.startswith("SCORE"):
            score = dealer.stdout.readline()
            assert score, "the dealer ended without a SCORE line"
        final = _scrape(url)
        assert final[hands_key] == hands
        assert final[("acpc_matches_running", ())] == 0
        dealer.communicate(timeout=TIMEOUT)
        assert dealer.returncode == 0
    finally:
        if dealer.poll() is None:
            dealer.kill()
        for bot in bots:
            bot.wait(timeout=TIMEOUT)
        err.close()
    live = json.loads((tmp_path / "live.json").read_text())
    assert live["estimators"]["io"]["chips"]["n"] == hands
    assert live["counts"]["dealer_queries"] > 0
    out = tmp_path / "offline.json"
    assert results_main([str(tmp_path / "live.log"), "-o", str(out)]) == 0
    offline = json.loads(out.read_text())
    assert json.dumps(offline["estimators"]) == json.dumps(live["estimators"])
