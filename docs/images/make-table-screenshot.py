"""Make the screenshots of docs/table.md: a real table, played in headless Chromium.

Run from the repository (needs the OS packages chromium and chromium-driver, and selenium)::

    python docs/images/make-table-screenshot.py [--out docs/images]

It starts ``acpc-lbr table``, sits down at heads-up no-limit against
``call-raise``, calls for a few hands, then takes: ``table-setup.png`` (the form),
``table-play.png`` (a decision, a typed raise size, the result and the history,
laptop width) and ``table-phone.png`` (the same at phone width).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from selenium import webdriver
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
            Select(driver.find_element(By.ID, "opponent")).select_by_value("call-raise")
            driver.save_screenshot(str(out / "table-setup.png"))
            driver.find_element(By.ID, "sit").click()
            for _ in range(6):  # a few hands, so that the result and the history have rows
                wait_turn(driver)
                driver.find_element(By.ID, "call").click()
                time.sleep(0.3)
            wait_turn(driver)
            amount = driver.find_element(By.ID, "amount")
            if amount.is_displayed():
                driver.find_element(By.ID, "potsize").click()
            driver.save_screenshot(str(out / "table-play.png"))
            driver.set_window_size(390, 1700)
            time.sleep(0.5)
            driver.save_screenshot(str(out / "table-phone.png"))
        finally:
            driver.quit()
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
