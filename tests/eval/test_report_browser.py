"""The report in a real browser: headless Chromium (Debian's package) driven by Playwright.

The page must load from a copied location with no console error, no page error and no
request for anything but the file itself; the curves and the rollout viewer must render,
and clicking an episode must show its transcript. Skipped, with the reason, where Chromium
or Playwright is not installed (`make test-browser` installs both and runs these).
"""

import os
import shutil
from pathlib import Path

import pytest

from tempering.config import load_config
from tempering.envs.fake import parity_env
from tempering.eval.report import write_report
from tempering.trainer import prepare_run, train

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not CHROMIUM.is_file(), reason="Debian's chromium is not installed (make test-browser)")


def open_in_browser(html: Path, screenshot: Path) -> dict:
    """Load `html` from disk; returns what the page did. Fails on any error or network request."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (make test-browser)")
    errors, requests = [], []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(html.as_uri(), wait_until="load")
            page.wait_for_selector(".plotly-graph-div .main-svg", timeout=60_000)
            traces = page.evaluate("document.querySelector('.plotly-graph-div').data.length")
            rows = page.locator("#list tr").count()
            page.locator("#list tr").nth(2).click()
            transcript = page.locator("#episode").inner_text()
            page.select_option("#f-step", index=1)
            filtered = page.locator("#f-count").inner_text()
            page.screenshot(path=str(screenshot), full_page=True)
            pwned = page.evaluate("window.PWNED === undefined")
        finally:
            browser.close()
    assert errors == [], errors
    assert [u for u in requests if u != html.as_uri()] == [], requests  # nothing fetched: not even a font
    return {"traces": traces, "rows": rows, "transcript": transcript, "filtered": filtered, "inert": pwned}


def test_a_tiny_runs_report_renders_offline_from_a_copied_location(tmp_path):
    cfg = load_config("configs/tiny-cpu.yaml", [])
    run = tmp_path / "run"
    prepare_run(cfg, run)
    train(cfg, run, steps=2, progress=False, env=parity_env())
    copy = tmp_path / "moved" / "report.html"
    copy.parent.mkdir()
    shutil.copy(run / "report.html", copy)
    shown = open_in_browser(copy, tmp_path / "report.png")
    assert shown["traces"] > 10  # every panel's line
    assert shown["rows"] == 17  # the header and the 16 episodes
    assert "turn 1: reward" in shown["transcript"] and "model reply" in shown["transcript"]
    assert shown["filtered"] == "8 of 16 episodes" and shown["inert"]
    assert (tmp_path / "report.png").stat().st_size > 10_000


@pytest.mark.slow
def test_a_real_smollm2_runs_report_renders(tmp_path):
    """A real SmolLM2 GRPO run's report (TEMPERING_REAL_RUN, default the pipeline's rl stage);
    the screenshot goes to TEMPERING_SCREENSHOT or the test's folder."""
    run = Path(os.environ.get("TEMPERING_REAL_RUN", "runs/smollm2-pipeline/rl"))
    if not (run / "store.sqlite").is_file():
        pytest.skip(f"no real run at {run}: run `temper pipeline configs/smollm2-pipeline.yaml` or `temper demo`")
    out = write_report(run, tmp_path / "report.html")
    shot = Path(os.environ.get("TEMPERING_SCREENSHOT", tmp_path / "report.png"))
    shown = open_in_browser(out, shot)
    assert shown["rows"] > 10 and "model reply" in shown["transcript"]
