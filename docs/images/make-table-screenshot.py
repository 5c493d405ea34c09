"""Make the screenshots of docs/table.md: a real table, played in headless Chromium.

Run from the repository (needs the OS packages chromium and chromium-driver, and selenium)::

    python docs/images/make-table-screenshot.py [--out docs/images]

It starts ``acpc-lbr table``, sits down at heads-up no-limit against
``always-call``, checks and calls for a few hands, then takes: ``table-setup.png`` (the form),
``table-play.png`` (a decision, a typed raise size, the result and the history,
laptop width) and ``table-phone.png`` (the same at phone width) and ``table-limit-over.png`` (a
limit match at its end, in a second tab: a second table).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ready
from selenium.webdriver.support.ui import Select, WebDriverWait


def browser(width: int, height: int) -> webdriver.Chrome:
    """Headless Chromium of the given window size."""
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(options=options, service=webdriver.ChromeService("/usr/bin/chromedriver"))


def wait_turn(driver: webdriver.Chrome, seconds: float = 20.0) -> None:
    """Until the check/call button is enabled (it is the person's turn)."""
    WebDriverWait(driver, seconds).until(ready.element_to_be_clickable((By.ID, "call")))


def limit_match(driver: webdriver.Chrome, url: str, out: Path) -> None:
    """A new table in a new tab: 6 hands of limit hold'em to the end (``table-limit-over.png``)."""
    driver.switch_to.new_window("tab")
    driver.get(url)
    WebDriverWait(driver, 10).until(lambda d: len(Select(d.find_element(By.ID, "opponent")).options) > 0)
    Select(driver.find_element(By.ID, "game")).select_by_value("holdem.limit.2p.reverse_blinds")
    Select(driver.find_element(By.ID, "opponent")).select_by_value("random")
    hands = driver.find_element(By.ID, "hands")
    hands.clear()
    hands.send_keys("6")
    driver.find_element(By.ID, "sit").click()
    while "over" not in driver.find_element(By.ID, "status").text:
        try:
            wait_turn(driver, 3.0)
        except TimeoutException:
            continue
        driver.find_element(By.ID, "raise" if driver.find_element(By.ID, "raise").is_enabled() else "call").click()
        time.sleep(0.3)
    driver.save_screenshot(str(out / "table-limit-over.png"))


def main() -> int:
    """Take the screenshots."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parent))
    args = parser.parse_args()
    out = Path(args.out)
    server = subprocess.Popen([sys.executable, "-m", "acpc_lbr.cli", "table", "--seconds", "60", "--seed", "7"],
                              stdout=subprocess.PIPE, text=True)
    try:
        url = (server.stdout.readline() if server.stdout else "").strip()
        driver = browser(1280, 860)
        try:
            driver.get(url)
            WebDriverWait(driver, 10).until(lambda d: len(Select(d.find_element(By.ID, "opponent")).options) > 0)
            Select(driver.find_element(By.ID, "opponent")).select_by_value("always-call")
            driver.save_screenshot(str(out / "table-setup.png"))
            driver.find_element(By.ID, "sit").click()
            for _ in range(12):  # a few hands, so that the result and the history have rows
                wait_turn(driver)
                driver.find_element(By.ID, "call").click()
                time.sleep(0.3)
            while True:  # a decision where a raise can be sized
                wait_turn(driver)
                if driver.find_element(By.ID, "amount").is_displayed():
                    break
                driver.find_element(By.ID, "call").click()
                time.sleep(0.3)
            driver.find_element(By.ID, "potsize").click()
            driver.save_screenshot(str(out / "table-play.png"))
            driver.set_window_size(390, 1700)
            time.sleep(0.5)
            driver.save_screenshot(str(out / "table-phone.png"))
            driver.set_window_size(1280, 860)
            limit_match(driver, url, out)
        finally:
            driver.quit()
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
