"""``acpc-lbr play`` as a process, against a tiny scripted dealer on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from acpc_lbr.cli.play import main
from agents.players import PLAYERS, load_strategy

REPO = Path(__file__).resolve().parents[2]
PLAY = [sys.executable, "-m", "acpc_lbr.cli", "play"]

#: (line the scripted dealer sends, True when the bot in position 1 must answer it)
SCRIPT = [
    ("MATCHSTATE:1:0::|2hAc", True),
    ("MATCHSTATE:1:0:r14085:|2hAc", False),
    ("MATCHSTATE:1:0:r14085f:|2hAc", False),
    ("MATCHSTATE:0:1::9h6s|", False),
    ("MATCHSTATE:0:1:c:9h6s|", True),
    ("MATCHSTATE:0:1:cc/:9h6s|/5s3s8h", True),
    ("MATCHSTATE:0:1:cc/c:9h6s|/5s3s8h", False),
]


def read_line(connection: socket.socket, buffer: bytearray) -> bytes:
    """One '\\n'-terminated line from the socket (bounded by the socket timeout)."""
    while b"\n" not in buffer:
        chunk = connection.recv(4096)
        if not chunk:
            raise EOFError("client closed the connection")
        buffer.extend(chunk)
    end = buffer.index(b"\n") + 1
    line = bytes(buffer[:end])
    del buffer[:end]
    return line


def run_scripted_match(
    args: list[str], query: bytes | None = None
) -> tuple[int, list[bytes], bytes]:
    """Start ``acpc-lbr play ARGS 127.0.0.1 PORT``, play SCRIPT to it, close; return its status."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(30)
        port = server.getsockname()[1]
        env = dict(os.environ, PYTHONPATH=str(REPO))
        process = subprocess.Popen(
            [*PLAY, args[0], "127.0.0.1", str(port), *args[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=REPO,
        )
        try:
            connection, _ = server.accept()
            with connection:
                connection.settimeout(20)
                buffer = bytearray()
                version = read_line(connection, buffer)
                announce = read_line(connection, buffer)
                received = []
                for line, must_answer in SCRIPT:
                    connection.sendall(line.encode() + b"\r\n")
                    if must_answer:
                        received.append(read_line(connection, buffer))
                if query is not None:
                    connection.sendall(query)
                    received.append(read_line(connection, buffer))
                assert not buffer
            _, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert version == b"VERSION:2.0.0\r\n"
    assert announce == b"# range-query 1 2\r\n"  # SDK bots answer range queries, versions 1 and 2
    return process.returncode, received, stderr


def test_always_call_plays_a_scripted_match_and_exits_zero() -> None:
    """The process sends VERSION, answers exactly its turns, and exits 0 on EOF."""
    status, received, stderr = run_scripted_match(
        ["always-call", "--game", "nolimit", "--seed", "1"]
    )
    expected = [f"{line}:c\r\n".encode() for line, answer in SCRIPT if answer]
    assert received == expected
    assert status == 0, stderr.decode()


def test_a_user_strategy_file_plays_and_answers_a_query(tmp_path: Path) -> None:
    """FILE.py:FUNCTION loads a strategy that both plays and answers a query on the connection."""
    bot = tmp_path / "my_bot.py"
    bot.write_text(
        textwrap.dedent(
            """
            from agents.sdk import Mix
            from protocol.rules import Action

            def strategy(view):
                return Mix({view.min_raise() if view.can_raise else Action.CALL: 1.0})
            """
        )
    )
    status, received, stderr = run_scripted_match(
        [f"{bot}:strategy", "--game", "nolimit"], query=b"QUERY:q9:1:0::|:c,r200\r\n"
    )
    assert received[0] == b"MATCHSTATE:1:0::|2hAc:r200\r\n"
    assert received[-1].startswith(b"RANGE:q9:c=0,0,") and received[-1].endswith(b",1\r\n")
    assert status == 0, stderr.decode()


def test_usage_errors_exit_two(capsys: pytest.CaptureFixture[str]) -> None:
    """Unknown bots, bad games, bad strategy specs and stray options give status 2 before connecting."""
    assert main(["no-such-bot", "127.0.0.1", "1", "--game", "nolimit"]) == 2
    assert main(["always-call", "127.0.0.1", "1", "--game", "no-such-game"]) == 2
    assert main(["/nonexistent/x.py:f", "127.0.0.1", "1", "--game", "nolimit"]) == 2
    assert main(["always-call", "127.0.0.1", "1", "--game", "nolimit", "--bogus"]) == 2
    assert "unknown bot" in capsys.readouterr().err


def test_registry_and_strategy_loading() -> None:
    """The registry holds the reference bots; MODULE:FUNCTION loads a strategy."""
    assert {"always-call", "always-raise", "always-fold", "call-raise", "random"} <= set(PLAYERS)
    assert callable(load_strategy("agents.bots:random_bot"))
    with pytest.raises(ValueError):
        load_strategy("agents.bots:no_such_function")
    with pytest.raises(ValueError):
        load_strategy("no-colon")


def test_connection_refused_exits_one() -> None:
    """Nothing listening on the port: status 1, promptly."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = subprocess.run(
        [*PLAY, "always-call", "127.0.0.1", str(port), "--game", "nolimit"],
        capture_output=True,
        check=False,
        timeout=30,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert result.returncode == 1, result.stderr.decode()


def test_help_lists_the_lbr_bots_own_options(capsys: pytest.CaptureFixture[str]) -> None:
    """``play --help`` shows the options the lbr bot takes after HOST PORT."""
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for option in ("--bets", "--rounds", "--timing"):
        assert option in text, option
