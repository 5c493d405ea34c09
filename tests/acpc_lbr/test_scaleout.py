"""Scale-out on Dask: batches from (seed, index), the same merged result on any number of
workers, a killed worker's batch rerun from its seed, the SLURM job script, and the
one-line message without Dask.

Every run here is Leduc with small batches on a LocalCluster bound to 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acpc_lbr.app import scaleout
from acpc_lbr.cli import evaluate

ACPC_LBR = [sys.executable, "-m", "acpc_lbr.cli"]
GAME = ["--game", "leduc", "--opponent", "random", "--rounds", "1-2"]


def estimators(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    return {name: est["chips"] for name, est in doc["estimators"].items() if isinstance(est, dict)}


def run_cli(args: list[str], tmp_path: Path, name: str, timeout: float = 300) -> Path:
    out = tmp_path / f"{name}.json"
    done = subprocess.run([*ACPC_LBR, "evaluate", *GAME, *args, "--json", str(out),
                           "--out", str(tmp_path / name)],
                          check=False, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    (tmp_path / f"{name}.stdout").write_text(done.stdout)
    (tmp_path / f"{name}.stderr").write_text(done.stderr)
    return out


def test_plan_covers_every_deal_once() -> None:
    batches = scaleout.plan_batches(1001, 250, seed=9)
    assert [b.hands for b in batches] == [250, 250, 250, 250, 1]
    assert len({b.seed for b in batches}) == len(batches)
    assert batches == scaleout.plan_batches(1001, 250, seed=9)
    assert scaleout.plan_batches(1001, 250, seed=10)[0].seed != batches[0].seed
    with pytest.raises(ValueError):
        scaleout.plan_batches(0, 10, seed=1)


def test_batch_argv_keeps_the_evaluation_and_drops_the_driver() -> None:
    argv = ["--game", "leduc", "--workers", "2", "--cluster-option", "queue=a", "--json=x.json",
            "--opponent-cmd", "bot --seed 3 {host} {port}", "--dry-run", "--bets", "fc"]
    assert scaleout.batch_argv(argv) == ["--game", "leduc", "--opponent-cmd",
                                         "bot --seed 3 {host} {port}", "--bets", "fc"]


def test_same_seed_same_result_with_one_or_two_workers(tmp_path: Path) -> None:
    common = ["--hands", "120", "--batch-hands", "40", "--seed", "7"]
    one = run_cli([*common, "--workers", "1"], tmp_path, "one")
    two = run_cli([*common, "--workers", "2", "--report", str(tmp_path / "two.html")], tmp_path, "two")
    assert estimators(one) == estimators(two)
    # The merged trajectory joins the batches in index order, whatever worker ran them,
    # and ends at the merged estimate; the driver writes the merged run's report.
    trajectories = [json.loads(path.read_text())["trajectory"] for path in (one, two)]
    assert trajectories[0] == trajectories[1]
    assert {80, 160, 240} <= set(trajectories[1]["hands"])
    final = json.loads(two.read_text())["estimators"]["duplicate"]["chips"]
    assert trajectories[1]["estimators"]["duplicate"]["mean"][-1] == final["mean"]
    page = (tmp_path / "two.html").read_text()
    assert 'id="running-mean-0"' in page and "trajectory-duplicate" in page
    doc = json.loads(two.read_text())
    assert doc["config"]["hands"] == 120 and doc["config"]["seed"] == 7
    assert [b["index"] for b in doc["scaleout"]["batches"]] == [0, 1, 2]
    assert doc["scaleout"]["given_up"] == [] and doc["scaleout"]["retries"] == 0
    assert estimators(one)["duplicate"]["n"] == 120
    # The output is plain evaluate's: the bound, the time lines, the counts, and progress lines.
    stdout, stderr = (tmp_path / "two.stdout").read_text(), (tmp_path / "two.stderr").read_text()
    assert "lower bound on exploitability (LBR's win rate), mbb/g: mean ± 1.96·se [95% interval]:" in stdout
    assert "\n  duplicate " in stdout and "(120 pairs)" in stdout
    assert "time: " in stdout and "hands/s" in stdout and "3 batches" in stdout
    assert "LBR: computation" in stdout and stdout.count("counts: ") == 1
    assert "240/240 hands" in stderr and "ETA" in stderr


def test_batch_size_gives_every_worker_a_batch_or_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    """--workers N makes at least N batches: without --batch-hands the size is chosen so
    (2,000 deals on 2 workers ran as one batch, one worker idle); a --batch-hands or --hands that
    cannot is refused in one line, before any worker starts."""
    assert scaleout.batch_size(2000, 2, None) == 1000
    assert scaleout.batch_size(100_000, 4, None) == scaleout.DEFAULT_BATCH_HANDS
    assert len(scaleout.plan_batches(2001, scaleout.batch_size(2001, 2, None), 1)) == 2
    assert scaleout.batch_size(2000, 2, 400) == 400
    with pytest.raises(ValueError, match="1 would sit idle; give --batch-hands 1000 or less"):
        scaleout.batch_size(2000, 2, 2000)
    with pytest.raises(ValueError, match="cannot be cut into 4 batches"):
        scaleout.batch_size(3, 4, None)
    assert evaluate.main([*GAME, "--workers", "2", "--hands", "2000", "--batch-hands", "2000"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "would sit idle" in err[0]


def batch_running_under(pid: int) -> bool:
    """Whether a worker process has a live ``acpc-lbr evaluate`` batch among its children."""
    import psutil  # installed with distributed

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    for child in children:
        try:
            if "evaluate" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                return True
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return False


def test_a_killed_worker_loses_no_deal_and_counts_none_twice(tmp_path: Path) -> None:
    """SIGKILL a worker while it runs a batch: the batch is rerun from its seed, same result."""
    import dask
    from distributed import Client, LocalCluster

    common = ["--hands", "120", "--batch-hands", "60", "--seed", "11"]
    undisturbed = run_cli([*common, "--workers", "1"], tmp_path, "calm")
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                         dashboard_address=None) as cluster, Client(cluster) as client:
        out = tmp_path / "killed.json"
        driver = subprocess.Popen([*ACPC_LBR, "evaluate", *GAME, *common, "--scheduler",
                                   cluster.scheduler_address, "--json", str(out),
                                   "--out", str(tmp_path / "killed")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killed = False
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline and driver.poll() is None:
            busy = [w for w, keys in client.processing().items()
                    if any("acpc-lbr-batch" in str(k) for k in keys)]
            if busy:
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                # Kill only while the batch's own evaluate process is alive under that
                # worker: a batch that already finished would leave nothing to rerun.
                if batch_running_under(pid):
                    os.kill(pid, signal.SIGKILL)
                    killed = True
            time.sleep(0.05)
        _, stderr = driver.communicate(timeout=300)
    assert killed, "no batch was seen running"
    assert driver.returncode == 0, stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["scaleout"]["retries"] >= 1, stderr
    assert doc["scaleout"]["given_up"] == []
    assert estimators(out) == estimators(undisturbed)


def test_slurm_dry_run_prints_the_job_script(capsys: pytest.CaptureFixture[str]) -> None:
    code = evaluate.main(["--cluster", "slurm", "--dry-run", "--cluster-option", "queue=short",
                          "--cluster-option", "memory=3GB"])
    out = capsys.readouterr().out
    assert code == 0
    assert "#SBATCH -p short" in out
    assert "#SBATCH" in out and "dask" in out  # the worker command it would start


def test_without_dask_one_line_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    code = evaluate.main(["--workers", "2"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "pip install -e '.[dask]'" in err


def test_dry_run_without_slurm_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert evaluate.main(["--dry-run"]) == 2
    assert "--cluster slurm" in capsys.readouterr().err


def test_live_metrics_publish_the_merged_estimate_and_batch_states(tmp_path: Path) -> None:
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    doc = json.loads(run_cli(["--hands", "20", "--seed", "3"], tmp_path, "one").read_text())
    live = scaleout._LiveMetrics(0, "127.0.0.1", "scaleout", workers=2, batches=5)
    live.update(doc, doc["counts"]["hands"], {"in_flight": 3, "done": 1, "given_up": 0,
                                              "retried": 0})
    with urllib.request.urlopen(f"http://127.0.0.1:{live.port}/metrics", timeout=10) as page:
        text = page.read().decode()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    duplicate = doc["estimators"]["duplicate"]["mbb_per_game"]
    key = (("estimator", "duplicate"), ("match", "scaleout"))
    assert samples[("acpc_estimate_mbb_per_game", key)] == duplicate["mean"]
    assert samples[("acpc_estimate_half_width_mbb_per_game", key)] == duplicate["half_width_95"]
    assert samples[("acpc_scaleout_batches", (("match", "scaleout"), ("state", "in_flight")))] == 3
    assert samples[("acpc_scaleout_workers", (("match", "scaleout"),))] == 2
    assert samples[("acpc_hands_total", (("match", "scaleout"),))] == doc["counts"]["hands"]
