"""A person's session in a real browser: headless Chromium plays ``acpc-lbr table`` by clicking.

Skipped where Chromium, its driver or selenium is missing (``.ci/run`` installs
them where apt can). The test starts the real command, sits down at heads-up
no-limit against the ``random`` bot, and plays every hand of a 22-hand match
through the page: calls by click and by keyboard, one raise to a typed size,
one decision left to the clock, one reload in the middle of a hand; then a
second table in a second tab, limit hold'em against an ACPC program given by
``--opponent-cmd``. For both it checks that what the page shows equals the
dealer's ``.log`` files, hand by hand, and that its results equal
``acpc-lbr results`` on the same files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acpc_lbr.stats import SeatedMean

webdriver = pytest.importorskip("selenium.webdriver")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="needs the OS packages chromium and chromium-driver")

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

HANDS = 22
SECONDS = 5.0  # the person's clock: short, so the timeout costs the test little, but room for a slow machine
BIG_BLIND = 100
LIMIT_HANDS = 6
LIMIT_BIG_BLIND = 10


@pytest.fixture
def table(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``acpc-lbr table`` running; its address and its log folder (from its first two lines)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "acpc_lbr.cli", "table", "--seconds", str(SECONDS), "--seed", "5",
         "--out", str(tmp_path / "logs"),
         "--opponent-cmd", f"program={sys.executable} -m acpc_lbr.cli play random {{host}} {{port}} --game {{game}}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ | {"PYTHONUNBUFFERED": "1"})
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        logs = server.stdout.readline().strip().removeprefix("logs: ")
        assert url.startswith("http://127.0.0.1:"), url
        yield url, Path(logs)
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture
def driver() -> Iterator[Any]:
    """Headless Chromium at a laptop's window size."""
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(flag)
    options.binary_location = CHROMIUM
    browser = webdriver.Chrome(options=options, service=webdriver.ChromeService(DRIVER))
    try:
        yield browser
    finally:
        browser.quit()


def _page_state(driver: Any) -> dict[str, Any] | None:
    """The snapshot the page last rendered (for the test's pacing only; the checks read the page)."""
    return driver.execute_script(
        "return typeof snap === 'undefined' || !snap ? null : "
        "{status: snap.status, decision: snap.decision, hand: snap.hand, played: snap.played}")


def _next_decision(driver: Any, last: tuple[int, str] | None, timeout: float = 20.0) -> dict[str, Any] | None:
    """Wait for a decision other than ``last`` with its buttons live; None once the match is over."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = _page_state(driver)
        if state is not None and state["status"] == "over":
            return None
        decision = state["decision"] if state is not None else None
        if decision is not None and (decision["hand"], decision["betting"]) != last and \
                driver.find_element(By.ID, "call").is_enabled():
            return decision
        time.sleep(0.05)
    raise AssertionError(f"no new decision within {timeout} s: {_page_state(driver)}")


def _log_hands(path: Path) -> list[dict[str, Any]]:
    """The STATE lines of a ``.log``: hand, betting, hole cards by name, board, values by name."""
    hands = []
    for line in path.read_text().splitlines():
        if not line.startswith("STATE:"):
            continue
        _, hand, betting, cards, values, names = line.split(":")
        who = names.split("|")
        holes, _, board = cards.partition("/")
        hands.append({"hand": int(hand), "betting": betting, "hole": dict(zip(who, holes.split("|"))),
                      "board": board.replace("/", ""), "value": dict(zip(who, map(float, values.split("|"))))})
    return hands


def _cards(cell: Any) -> str:
    return "".join(c.get_attribute("data-card") for c in cell.find_elements(By.CSS_SELECTOR, ".card"))


def _play(driver: Any) -> dict[str, Any]:
    """Play the whole match through the page; what was done where."""
    done: dict[str, Any] = {"raise": None, "timeout": None, "reload": None, "keys": 0}
    last = None
    for count in range(400):
        decision = _next_decision(driver, last)
        if decision is None:
            return done
        last = (decision["hand"], decision["betting"])
        if done["raise"] is None and decision["raise"] and decision["raise"]["min"] + 7 <= decision["raise"]["max"]:
            size = decision["raise"]["min"] + 7
            amount = driver.find_element(By.ID, "amount")
            amount.clear()
            amount.send_keys(str(size))
            assert driver.find_element(By.ID, "raise").text.startswith(("Raise to", "Bet"))
            driver.find_element(By.ID, "raise").click()
            done["raise"] = (decision["hand"], decision["betting"], size)
        elif done["timeout"] is None and count >= 3:
            assert float(driver.find_element(By.ID, "clocktext").text.removesuffix(" s")) > 0  # the countdown shows
            time.sleep(SECONDS + 0.5)  # do nothing: the seat's clock acts
            done["timeout"] = (decision["hand"], decision["betting"], decision["fold"])
        elif done["reload"] is None and done["timeout"] is not None:
            hole = driver.find_element(By.ID, "youcards").get_attribute("innerText")
            driver.refresh()
            again = _next_decision(driver, None)
            assert again is not None and (again["hand"], again["betting"]) == last  # the same decision
            assert driver.find_element(By.ID, "youcards").get_attribute("innerText") == hole
            driver.find_element(By.ID, "call").click()
            done["reload"] = last
        elif count % 3 == 0:
            ActionChains(driver).send_keys("c").perform()  # the keyboard shortcut
            done["keys"] += 1
        else:
            driver.find_element(By.ID, "call").click()
    raise AssertionError("the match did not end")


def test_a_person_plays_through_the_page_and_the_page_equals_the_logs(table: tuple[str, Path], driver: Any) -> None:
    """22 hands by clicking (a typed raise, a timeout, a reload): every number shown is the dealer's."""
    url, logs = table
    _sit_down(driver, url, "holdem.nolimit.2p.reverse_blinds", "random", HANDS)
    done = _play(driver)
    assert done["raise"] and done["timeout"] and done["reload"] and done["keys"]

    log = _log_hands(next(logs.glob("table1-*[!e].log")))
    baseline = _log_hands(next(logs.glob("table1-*.baseline.log")))
    assert len(log) == HANDS and len(baseline) == HANDS
    by_hand = {h["hand"]: h for h in log}
    _check_history(driver, by_hand)
    _check_marks(driver, by_hand, done)
    _check_results(driver, log, baseline, logs, "table1", BIG_BLIND)
    _second_table_in_limit(driver, url, logs)


def _sit_down(driver: Any, url: str, game: str, opponent: str, hands: int) -> None:
    driver.get(url)
    WebDriverWait(driver, 10).until(lambda d: len(Select(d.find_element(By.ID, "opponent")).options) > 0)
    Select(driver.find_element(By.ID, "game")).select_by_value(game)
    Select(driver.find_element(By.ID, "opponent")).select_by_value(opponent)
    hands_field = driver.find_element(By.ID, "hands")
    hands_field.clear()
    hands_field.send_keys(str(hands))
    driver.find_element(By.ID, "sit").click()


def _second_table_in_limit(driver: Any, url: str, logs: Path) -> None:
    """A second table in a second tab: limit hold'em against a program (``--opponent-cmd``),
    raising whenever the page offers it; its page equals its logs too."""
    driver.switch_to.new_window("tab")
    _sit_down(driver, url, "holdem.limit.2p.reverse_blinds", "program", LIMIT_HANDS)
    last = None
    while (decision := _next_decision(driver, last, timeout=60.0)) is not None:
        last = (decision["hand"], decision["betting"])
        assert not driver.find_element(By.ID, "sizing").is_displayed()  # one raise size in limit
        driver.find_element(By.ID, "raise" if decision["raise"] else "call").click()
    log = _log_hands(next(logs.glob("table2-*[!e].log")))
    baseline = _log_hands(next(logs.glob("table2-*.baseline.log")))
    assert len(log) == LIMIT_HANDS and len(baseline) == LIMIT_HANDS
    assert any("r" in h["betting"] for h in log)
    _check_history(driver, {h["hand"]: h for h in log}, LIMIT_HANDS)
    _check_results(driver, log, baseline, logs, "table2", LIMIT_BIG_BLIND)


def _check_history(driver: Any, by_hand: dict[int, dict[str, Any]], hands: int = HANDS) -> None:
    """Every row of the page's history is the log's hand: cards, board, betting, chips."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    assert len(rows) == hands
    for row in rows:
        cells = row.find_elements(By.TAG_NAME, "td")
        hand = by_hand[int(cells[0].text)]
        opponent = next(name for name in hand["hole"] if name != "human")
        assert float(cells[1].text.replace("+", "")) == hand["value"]["human"]
        assert _cards(cells[2]) == hand["hole"]["human"]
        shown = _cards(cells[3])
        folded = hand["betting"].endswith("f")
        assert shown == ("" if folded else hand["hole"][opponent])
        assert _cards(cells[4]) == hand["board"]
        assert cells[5].text == hand["betting"]


def _check_marks(driver: Any, by_hand: dict[int, dict[str, Any]], done: dict[str, Any]) -> None:
    """The typed raise and the clock's action are in the log where the page made them."""
    hand, betting, size = done["raise"]
    assert by_hand[hand]["betting"].replace("/", "").startswith(betting.replace("/", "") + f"r{size}")
    hand, betting, could_fold = done["timeout"]
    assert by_hand[hand]["betting"].replace("/", "").startswith(betting.replace("/", "") + ("f" if could_fold else "c"))
    row = driver.find_element(By.CSS_SELECTOR, f'#history tbody tr[data-hand="{hand}"]')
    assert int(row.get_attribute("data-timed-out")) >= 1


def _shown(driver: Any, key: str) -> tuple[str, str, str]:
    return tuple(driver.find_element(By.ID, f"{kind}-{key}").text for kind in ("r", "h", "n"))  # type: ignore[return-value]


def _signed(x: float) -> str:
    """A figure as the page writes it (``signed`` in page.html: no decimals, + when above 0)."""
    text = f"{x:.0f}"
    return "+" + text if x > 0 else text


def _expected(values: list[float], big_blind: int, seated: bool = True) -> tuple[str, str, str]:
    """The page's mean, printed 95% interval and hands for these chip values of hands 0, 1, ...
    (the results document's interval, scaled to mbb/g as the session does: within seats over
    hands, the seat the hand's parity; the difference's over deals, unseated)."""
    stat = SeatedMean()
    for hand, v in enumerate(values):
        stat.add(v, hand % 2 if seated else None)
    scale = 1000.0 / big_blind
    low, high = stat.interval()
    return (_signed(stat.mean * scale), f"[{_signed(low * scale)}, {_signed(high * scale)}]", str(stat.n))


def _check_results(driver: Any, log: list[dict[str, Any]], baseline: list[dict[str, Any]], logs: Path,
                   table: str, big_blind: int) -> None:
    """The page's three results equal the logs', and ``acpc-lbr results`` agrees."""
    person = [h["value"]["human"] for h in log]
    base = {h["hand"]: h["value"]["baseline"] for h in baseline}
    assert _shown(driver, "you") == _expected(person, big_blind)
    assert _shown(driver, "base") == _expected(list(base.values()), big_blind)
    assert _shown(driver, "diff") == _expected([h["value"]["human"] - base[h["hand"]] for h in log], big_blind,
                                               seated=False)
    for path, shown in ((next(logs.glob(f"{table}-*[!e].log")), "you"),
                        (next(logs.glob(f"{table}-*.baseline.log")), "base")):
        document = subprocess.run([sys.executable, "-m", "acpc_lbr.cli", "results", str(path), "--json"],
                                  capture_output=True, text=True, check=True).stdout
        raw = json.loads(document)["estimators"]["raw"]["mbb_per_game"]
        mean, half, n = _shown(driver, shown)
        interval = f"[{_signed(raw['low_95'])}, {_signed(raw['high_95'])}]"
        assert (f"{raw['mean']:.0f}", interval, raw["n"]) == (mean.lstrip("+"), half, int(n))
