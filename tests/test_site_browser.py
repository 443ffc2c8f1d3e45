"""The results site of a finished run of the examples, in a real browser (Debian's Chromium, headless,
driven by chromedriver through Selenium): from the index, one click reaches a run's page, which shows the
f2p tests that did not pass, the agent's diff and the logs; the grid's filters work. One Chromium
session for the module. Screenshots go to `$KOTLIN_BENCH_SCREENSHOTS` (default: the test's tmp dir)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.results.summary import read_summary
from kotlin_bench.tools.workspace import Workspace

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT_SEC = 30


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        selenium_ready = False
    else:
        selenium_ready = True
    if not (selenium_ready and Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        if os.environ.get("CI"):
            pytest.fail("Chromium, chromedriver or selenium missing: CI must run scripts/setup.sh --tests")
        pytest.skip("Chromium, chromedriver or selenium missing (scripts/setup.sh --tests)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--window-size=1300,1800",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("KOTLIN_BENCH_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wait_for_page(driver: Any, suffix: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT_SEC).until(
        lambda d: (
            d.current_url.endswith(suffix) and d.execute_script("return document.readyState") == "complete"
        )
    )


def click_cell(driver: Any, index: Path, agent: str, task: str) -> None:
    """Open the index and click the grid's square of (agent, task, attempt 1)."""
    from selenium.webdriver.common.by import By

    driver.get(index.as_uri())
    wait_for_page(driver, "index.html")
    link = f"runs/{agent}/{task}/attempt-1.html"
    driver.find_element(By.CSS_SELECTOR, f'#grid a[href="{link}"]').click()
    wait_for_page(driver, link)


def test_one_click_from_the_index_to_a_nop_run_and_an_oracle_run(
    finished_examples: Workspace, browser: Any, shots: Path
) -> None:
    from selenium.webdriver.common.by import By

    root = finished_examples.root
    index = root / names.SITE_INDEX
    task = "examples_calc-4"
    click_cell(browser, index, "nop", task)
    result = json.loads((root / names.verify_result("nop", task, 1)).read_text())
    missing = result["verifier"]["categories"]["f2p"]["missing"]
    tests = browser.find_element(By.ID, "tests").text
    assert missing and all(name in tests for name in missing)
    assert browser.find_element(By.ID, "diff-empty").text == "(empty: the agent changed nothing)"
    files = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "#files a")]
    assert any(href.endswith(f"runs/nop/{task}/attempt-1/work/work.json") for href in files)
    logs = {a.text: a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "h3 a")}
    whole = [href for text, href in logs.items() if text.startswith("(the whole log")]
    assert any(href.endswith(f"runs/nop/{task}/attempt-1/verifier.log") for href in whole)
    assert "junit_compare: UNRESOLVED" in browser.find_element(By.TAG_NAME, "body").text
    browser.save_screenshot(str(shots / "nop-run.png"))

    click_cell(browser, index, "oracle", task)
    diff = browser.find_element(By.ID, "diff").text
    agent_diff = (root / names.work_dir("oracle", task, 1) / names.AGENT_DIFF).read_text()
    added = [line for line in agent_diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added and all(line.strip() in diff for line in added)
    assert "resolved" in browser.find_element(By.CSS_SELECTOR, "#outcome .badge").text
    browser.save_screenshot(str(shots / "oracle-run.png"))


def test_the_grid_filters_by_agent_and_reason(
    finished_examples: Workspace, browser: Any, shots: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    summary = read_summary(finished_examples.root / names.SUMMARY_CSV)
    reason = summary.loc[summary["agent"] == "nop", "reason"].iloc[0]
    expected = sorted(set(summary.loc[summary["reason"] == reason, "task"]))
    browser.get((finished_examples.root / names.SITE_INDEX).as_uri())
    wait_for_page(browser, "index.html")
    Select(browser.find_element(By.ID, "f-reason")).select_by_visible_text(reason)
    WebDriverWait(browser, WAIT_SEC).until(
        lambda d: d.find_element(By.ID, "shown").text == f"{len(expected)} task(s) shown"
    )
    rows = [r for r in browser.find_elements(By.CSS_SELECTOR, "#grid tbody tr") if r.is_displayed()]
    assert [r.find_element(By.TAG_NAME, "th").text for r in rows] == expected
    Select(browser.find_element(By.ID, "f-reason")).select_by_visible_text("all")
    Select(browser.find_element(By.ID, "f-agent")).select_by_visible_text("oracle")
    tasks = sorted(set(summary["task"]))
    WebDriverWait(browser, WAIT_SEC).until(
        lambda d: d.find_element(By.ID, "shown").text == f"{len(tasks)} task(s) shown"
    )
    shown = [a for a in browser.find_elements(By.CSS_SELECTOR, "#grid td a") if a.is_displayed()]
    assert len(shown) == len(tasks) and all("/oracle/" in a.get_attribute("href") for a in shown)
    browser.save_screenshot(str(shots / "index.png"))


def test_compare_oracle_and_nop_on_the_examples(finished_examples: Workspace) -> None:
    """The acceptance of the paired comparison: every example discordant, exact McNemar p = 2 / 2^n."""
    done = subprocess.run(
        [sys.executable, "-m", "kotlin_bench", "compare", "oracle", "nop"],
        cwd=finished_examples.root / "results",  # any directory inside the workflow
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    from tests.conftest import EXAMPLES

    n = len(EXAMPLES)  # every example: oracle solves it, nop does not
    assert f"discordant: {n} ({n} only oracle, 0 only nop)" in done.stdout
    assert f"p = {2 * 0.5**n:.4g} (exact McNemar)" in done.stdout
    summary = (finished_examples.root / names.SUMMARY_MD).read_text()
    assert f"| oracle vs nop | attempt 1 | {n} | {n} | 0 | +100.0 pts |" in summary


def test_the_index_shows_the_grid_in_the_first_screen(
    finished_examples: Workspace, browser: Any, shots: Path
) -> None:
    """Issue 31: the grid was ~2000 px down the index. In a laptop's window it is in the first screen, its
    squares coloured by outcome, and the charts are on the page."""
    from selenium.webdriver.common.by import By

    browser.set_window_size(1280, 800)
    try:
        browser.get((finished_examples.root / names.SITE_INDEX).as_uri())
        wait_for_page(browser, "index.html")
        height = browser.execute_script("return window.innerHeight")
        first = browser.find_element(By.CSS_SELECTOR, "#grid tbody tr td a")
        top = browser.execute_script("return arguments[0].getBoundingClientRect().top", first)
        assert 0 < top < height, (top, height)
        colour = first.value_of_css_property("background-color")
        assert colour not in ("rgba(0, 0, 0, 0)", "transparent"), colour
        legend = browser.find_element(By.CLASS_NAME, "legend").text
        assert "The agent's outcomes" in legend
        charts = browser.find_elements(By.CSS_SELECTOR, ".charts img")
        assert charts and all(
            browser.execute_script("return arguments[0].naturalWidth", i) > 0 for i in charts
        )
        browser.save_screenshot(str(shots / "index-first-screen.png"))
    finally:
        browser.set_window_size(1300, 1800)


def test_a_predictions_run_page_shows_the_patch(tmp_path: Path, browser: Any, shots: Path) -> None:
    """A predictions run (synthetic records, the site built as rule site builds it): its page shows the
    patch as given and as normalised, and which applier applied it."""
    from selenium.webdriver.common.by import By

    from tests.test_site import build, predictions_site

    root = predictions_site(tmp_path)
    build(root)
    page = names.site_run_page("my-model", "calc-1", 1)
    browser.get((root / page).as_uri())
    wait_for_page(browser, page.rsplit("/", 1)[1])
    given = browser.find_element(By.ID, "patch-given").text
    normalised = browser.find_element(By.ID, "patch-normalised").text
    assert "Here is my fix:" in given and "+new" in normalised and "```" not in normalised
    assert "Applied by git apply --verbose" in browser.find_element(By.ID, "applied").text
    browser.save_screenshot(str(shots / "predictions-run.png"))


def test_a_compare_page_shows_two_diffs_side_by_side(
    finished_examples: Workspace, browser: Any, shots: Path
) -> None:
    from selenium.webdriver.common.by import By

    page = finished_examples.root / names.site_pair_page("oracle", "nop")
    browser.get(page.as_uri())
    wait_for_page(browser, page.name)
    section = browser.find_elements(By.CSS_SELECTOR, "section.discordant")[0]
    left, right = section.find_elements(By.CSS_SELECTOR, ".side")
    assert left.location["y"] == right.location["y"] and left.location["x"] < right.location["x"]
    assert "oracle" in left.text and "nop" in right.text
    assert left.find_elements(By.CSS_SELECTOR, "pre.diff .add")  # oracle's fix
    assert "(empty: the agent changed nothing)" in right.text
    browser.save_screenshot(str(shots / "compare.png"))


def test_a_copy_of_results_opens_with_working_links(
    finished_examples: Workspace, browser: Any, tmp_path: Path
) -> None:
    """Issue 31: copying results/site/ alone broke its links. A copy of results/ elsewhere (file://) opens,
    one click reaches a run, and the run's log links lead to the copied files."""
    from selenium.webdriver.common.by import By

    copy = tmp_path / "copied" / "results"
    shutil.copytree(finished_examples.root / "results", copy, ignore=shutil.ignore_patterns("*.lock"))
    task = (
        "examples_calc-4"
        if (copy / "runs/oracle/examples_calc-4").is_dir()
        else sorted(p.name for p in (copy / "runs/oracle").iterdir())[0]
    )
    click_cell(browser, copy / "site/index.html", "oracle", task)
    assert browser.current_url.startswith(copy.as_uri())
    links = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "a[href]")]
    local = [h for h in links if h.startswith("file://")]
    assert local and all(h.startswith(copy.as_uri()) for h in local)
    missing = [h for h in local if not Path(h.removeprefix("file://").split("#")[0]).exists()]
    assert missing == []
