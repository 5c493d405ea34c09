"""Offline checks of the docker-compose deployment (no Docker engine runs here)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from ruamel.yaml import YAML

from dealer.metrics import DealerMetrics, metric_names

ROOT = Path(__file__).resolve().parents[2]


def _yaml(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


def test_compose_file_follows_the_compose_specification() -> None:
    """docker-compose.yml validates against the compose-spec JSON schema."""
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
         str(ROOT / "docker-compose.yml")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_has_the_five_services_and_publishes_on_loopback_only() -> None:
    """Dealer, LBR agent, bot, Prometheus and Grafana; host ports bound to 127.0.0.1."""
    compose = _yaml(ROOT / "docker-compose.yml")
    assert {"dealer", "lbr", "bot", "prometheus", "grafana"} <= set(compose["services"])
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
    assert (ROOT / "Dockerfile").is_file()


def test_prometheus_scrapes_the_dealer_metrics_port() -> None:
    """Prometheus's target is the dealer service on the port its command exposes."""
    compose = _yaml(ROOT / "docker-compose.yml")
    command = compose["services"]["dealer"]["command"]
    port = command[command.index("--metrics-port") + 1]
    config = _yaml(ROOT / "deploy" / "prometheus.yml")
    targets = [t for job in config["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert f"dealer:{port}" in targets


def test_dashboard_queries_only_exported_metrics() -> None:
    """Every metric the Grafana dashboard queries is one the dealer exports."""
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "dashboards" / "acpc-lbr.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    used = {name for expr in exprs for name in re.findall(r"\bacpc_[a-z_]+", expr)}
    exported = metric_names(DealerMetrics())
    assert used, "the dashboard queries no acpc_ metric"
    assert used <= exported, used - exported
    titles = " ".join(p["title"].lower() for p in dashboard["panels"])
    for topic in ("estimate", "hands per second", "latency", "error"):
        assert topic in titles


def test_compose_commands_are_accepted_by_our_command_line() -> None:
    """The dealer, LBR and bot commands of the compose file parse with acpc-lbr's own parsers."""
    from agents.cli import PLAYERS, _parser
    from dealer.cli import parse_configs
    from protocol.gamedef import load_game

    services = _yaml(ROOT / "docker-compose.yml")["services"]
    dealer = services["dealer"]["command"]
    assert dealer[0] == "dealer"
    groups, options = parse_configs(dealer[1:])
    assert groups and options.metrics_port == 9100
    ports = [int(p) for p in dealer[dealer.index("-p") + 1].split(",")]
    for name in ("lbr", "bot"):
        command = services[name]["command"]
        assert command[0] == "play"
        args, extra = _parser().parse_known_args(command[1:])
        assert args.host == "dealer" and args.port in ports
        PLAYERS[args.bot](load_game(args.game), args.seed, extra)  # builds the client, no socket
