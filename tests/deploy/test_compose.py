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
    from acpc_lbr.cli.dealer import parse_configs
    from acpc_lbr.cli.play import _parser
    from agents.players import PLAYERS
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


# -- mounts, ownership, start-up order -------------------------------------------------

#: Services of third-party images: the paths their images create for data, with the
#: owner the image gives them (prom/prometheus declares VOLUME /prometheus, owned by
#: nobody, the user it runs as). A new writable mount on such an image needs an entry.
THIRD_PARTY_DATA = {"prom/prometheus": {"/prometheus"}}


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(
        line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")))
    result = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


def dockerfile_paths(dockerfile: str) -> tuple[dict[str, str], str]:
    """The directories a Dockerfile creates, with their owners, and the user it runs as.

    Understands ``useradd --create-home NAME`` (``/home/NAME``), ``install -d -o USER
    ... PATH...``, ``mkdir [-p] PATH...`` (owned by the current USER) and ``chown
    [-R] USER[:GROUP] PATH...``; WORKDIR creates a missing directory owned by root.
    """
    import shlex

    owned: dict[str, str] = {}
    user = "root"
    for instruction, rest in _instructions(dockerfile):
        if instruction == "USER":
            user = rest.split(":")[0]
        elif instruction == "WORKDIR":
            owned.setdefault(rest, "root")
        elif instruction == "RUN":
            for command in re.split(r"&&|;", rest):
                words = shlex.split(command)
                if not words:
                    continue
                if words[0] == "useradd" and {"--create-home", "-m"} & set(words):
                    owned[f"/home/{words[-1]}"] = words[-1]
                elif words[0] == "install" and "-d" in words:
                    owner = words[words.index("-o") + 1] if "-o" in words else user
                    skip = {i + 1 for i, w in enumerate(words) if w in ("-o", "-g", "-m")}
                    for i, word in enumerate(words[1:], 1):
                        if i not in skip and not word.startswith("-"):
                            owned[word] = owner
                elif words[0] == "mkdir":
                    for word in words[1:]:
                        if not word.startswith("-"):
                            owned[word] = user
                elif words[0] == "chown":
                    args = [w for w in words[1:] if not w.startswith("-")]
                    for path in args[1:]:
                        owned[path] = args[0].split(":")[0]
    return owned, user


def _mounts(service: dict) -> list[tuple[str, bool]]:
    """(container path, read-only) of every volume of a service, short or long syntax."""
    mounts = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            mounts.append((volume["target"], bool(volume.get("read_only", False))))
        else:
            parts = str(volume).split(":")
            target = parts[1] if len(parts) > 1 else parts[0]
            mounts.append((target, len(parts) > 2 and "ro" in parts[2].split(",")))
    return mounts


def mount_problems(compose: dict, dockerfile: str) -> list[str]:
    """Every writable mount (and working_dir) of a service of our image that the image does not
    create owned by the user it runs as; every writable mount of a third-party image that is
    not one of its data directories."""
    owned, user = dockerfile_paths(dockerfile)
    ours = {s.get("image") for s in compose["services"].values() if "build" in s}
    problems = []
    for name, service in compose["services"].items():
        image = str(service.get("image", ""))
        if "build" in service or image in ours:
            for target, read_only in _mounts(service):
                if not read_only and owned.get(target) != user:
                    problems.append(f"{name}: {target} is mounted but the Dockerfile does not "
                                    f"create it owned by {user} (has: {owned.get(target)})")
            workdir = service.get("working_dir")
            if workdir is not None and workdir not in owned:
                problems.append(f"{name}: working_dir {workdir} is not created by the Dockerfile")
        else:
            allowed = THIRD_PARTY_DATA.get(image.split(":")[0], set())
            for target, read_only in _mounts(service):
                if not read_only and target not in allowed:
                    problems.append(f"{name}: writable mount {target} on {image} is not a known "
                                    "data directory of that image")
    return problems


def test_every_mount_exists_in_the_image_with_the_right_owner() -> None:
    """The dealer writes its logs to the match-logs volume: the Dockerfile creates that path
    (and every other writable mount and working directory) owned by the user the container
    runs as, and NUMBA_CACHE_DIR too; third-party images mount only their data directories."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    compose = _yaml(ROOT / "docker-compose.yml")
    assert mount_problems(compose, dockerfile) == []
    owned, user = dockerfile_paths(dockerfile)
    assert user == "acpc"
    env = dict(re.findall(r"^ENV (\w+)=(\S+)", dockerfile, flags=re.MULTILINE))
    assert owned.get(env["NUMBA_CACHE_DIR"]) == "acpc"


def test_the_mount_check_catches_a_missing_or_root_owned_directory() -> None:
    """The check fails for the original defect (a volume on a path the image never creates)
    and for a path created while still root."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    compose = _yaml(ROOT / "docker-compose.yml")
    without = dockerfile.replace(" /home/acpc/logs", "")
    assert "/home/acpc/logs" not in without
    assert any("/home/acpc/logs" in p for p in mount_problems(compose, without))
    as_root = without.replace("USER acpc", "RUN mkdir -p /home/acpc/logs\nUSER acpc")
    assert any("has: root" in p for p in mount_problems(compose, as_root))
    compose["services"]["dealer"]["volumes"].append("scratch:/var/scratch")
    assert any("/var/scratch" in p for p in mount_problems(compose, dockerfile))


def test_start_up_waits_for_a_healthy_dealer_and_restarts_are_bounded() -> None:
    """lbr and bot start when the dealer's healthcheck passes (and restart with it); the dealer
    restarts on failure a bounded number of times, and so do they; Prometheus keeps its data in
    a named volume."""
    compose = _yaml(ROOT / "docker-compose.yml")
    services = compose["services"]
    assert "healthcheck" in services["dealer"]
    assert re.fullmatch(r"on-failure:\d+", services["dealer"]["restart"])
    for name in ("lbr", "bot"):
        dependency = services[name]["depends_on"]["dealer"]
        assert dependency["condition"] == "service_healthy" and dependency["restart"] is True
        assert re.fullmatch(r"on-failure:\d+", services[name]["restart"])
    assert "prometheus-data:/prometheus" in services["prometheus"]["volumes"]
    assert "prometheus-data" in compose["volumes"]


def test_dockerignore_keeps_the_context_small_but_keeps_what_the_image_copies() -> None:
    """.dockerignore excludes local state (.git, .venv, caches, match output) and none of the
    files the Dockerfile copies."""
    import fnmatch

    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert {".git", ".venv"} <= set(patterns)

    def ignored(path: str) -> bool:
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatch(prefix, pattern.removeprefix("**/"))
                   or fnmatch.fnmatch(parts[-1], pattern.removeprefix("**/"))
                   for pattern in patterns if not pattern.startswith("!") for prefix in prefixes)

    sources = []
    for instruction, rest in _instructions((ROOT / "Dockerfile").read_text()):
        if instruction == "COPY":
            sources += rest.split()[:-1]
    assert sources
    for source in sources:
        files = [source] if (ROOT / source).is_file() else [
            str(p.relative_to(ROOT)) for p in (ROOT / source).rglob("*.py")]
        assert files, source
        for path in files:
            assert not ignored(path), path
    assert ignored(".venv/lib/x.py") and ignored("live.log")


def test_the_metrics_endpoint_is_reachable_by_prometheus_alone() -> None:
    """The dealer binds /metrics to its address on a network only it and Prometheus join (issue 33:
    a bot on the seats' network could otherwise scrape it or hold its connections open)."""
    services = _yaml(ROOT / "docker-compose.yml")["services"]
    dealer = services["dealer"]
    bind = dealer["command"][dealer["command"].index("--metrics-bind") + 1]
    assert bind not in ("0.0.0.0", "::")
    network = next(name for name, spec in dealer["networks"].items() if (spec or {}).get("ipv4_address") == bind)

    def networks(service: dict) -> set[str]:
        found = service.get("networks", [])
        return set(found if isinstance(found, list) else found.keys())

    assert {name for name, service in services.items() if network in networks(service)} == {"dealer", "prometheus"}
    assert "ports" not in dealer
