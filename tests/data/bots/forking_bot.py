"""A bot for the process tests: it forks a helper that outlives it unless someone kills it.

Usage: python forking_bot.py MODE PIDFILE GAME HOST PORT

The helper ignores SIGTERM, sleeps five minutes and holds the bot's standard
output and error open (as a bot's logger or watchdog might). Both pids go to
PIDFILE. MODE ``play``: the bot then plays (plain_call.py, check/call) and
exits at the match's end, leaving the helper behind. MODE ``hang``: the bot
ignores SIGTERM, sends its VERSION line and never answers.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HELPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"


def main() -> None:
    mode, pidfile, game, host, port = sys.argv[1:6]
    helper = subprocess.Popen([sys.executable, "-c", HELPER])
    Path(pidfile).write_text(f"{os.getpid()} {helper.pid}\n")
    if mode == "play":
        plain = str(Path(__file__).with_name("plain_call.py"))
        os.execv(sys.executable, [sys.executable, plain, game, host, port])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"VERSION:2.0.0\r\n")
        time.sleep(300)


if __name__ == "__main__":
    main()
