"""The web console in real headless Chromium (Debian's, driven by Playwright's Python package):
type a task, watch the DAG and the waterfall draw while the run executes (scripted planner,
tools that sleep), open the answer and a step's result; approve a step in the inbox. The
screenshots are kept (`EMBER_ARTIFACTS`, default `build/console/`)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason='ember serve needs the server extra: pip install ".[dev]"')
pytest.importorskip("playwright", reason='the browser tests need playwright: pip install ".[dev]"')

from playwright.sync_api import Browser, Page, expect, sync_playwright

from .console.support import serve_child

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(os.environ.get("EMBER_ARTIFACTS", Path(__file__).parents[1] / "build" / "console"))

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium: `apt-get install chromium` (.ci/run does)"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    errors: list[str] = []
    opened = context.new_page()
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == []  # no script error on any page


def _shot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def test_a_run_draws_its_dag_and_waterfall_live_then_its_answer(
    page: Page, tmp_path: Path, ember_env: dict[str, str]
) -> None:
    with serve_child(tmp_path, ember_env, auth=False) as base:
        page.goto(base + "/")
        box = page.get_by_label("Task, in plain words")
        expect(box).to_be_focused()
        prefills: list[int] = []
        page.on(
            "response",
            lambda r: prefills.append(r.status) if r.url.endswith("/v1/prefill") else None,
        )
        box.press_sequentially("plan a slow trip", delay=20)
        page.wait_for_timeout(400)  # debounced: the latest text only
        assert 1 <= len(prefills) <= 3
        assert set(prefills) == {409}  # the scripted planner cannot prefill: said, not shown
        box.press("Enter")

        expect(page).to_have_url(re.compile(r"#/runs/r-[0-9a-f]+$"))
        nodes = page.locator("#dag g.node")
        expect(nodes).to_have_count(4)  # the plan's steps, drawn as they arrived
        expect(page.locator("#dag g.node.running").first).to_be_visible()  # while it runs
        expect(page.locator("#dag path.edge")).to_have_count(3)  # 2->3, 3->4, 1->4
        expect(page.locator("#waterfall rect.bar.live").first).to_be_visible()
        _shot(page, "run-live")

        expect(page.locator("#dag g.node.succeeded")).to_have_count(4, timeout=15_000)
        expect(page.get_by_role("status").filter(has_text="succeeded")).to_be_visible()
        for kind in ("plan", "tool", "journal", "e2e"):
            expect(page.locator(f"#waterfall rect.bar.{kind}").first).to_be_attached()
        expect(page.locator("#answer")).not_to_contain_text("appears when")
        page.locator("#steps summary", has_text="4. slow_step").click()
        expect(page.locator("#steps details[open] pre").last).to_contain_text('"label": "mail"')
        _shot(page, "run-done")

        page.get_by_role("link", name="Runs").click()
        expect(page.locator("tbody tr")).to_have_count(1)
        page.get_by_label("Status").select_option("failed")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("tbody")).to_contain_text("No runs.")
        page.get_by_role("link", name="Tools").click()
        expect(page.locator("tbody")).to_contain_text("wire_money")
        expect(page.locator("tbody")).to_contain_text("module:")


def test_a_step_is_approved_in_the_inbox(
    page: Page, tmp_path: Path, ember_env: dict[str, str]
) -> None:
    with serve_child(tmp_path, ember_env, auth=False) as base:
        page.goto(base + "/")
        box = page.get_by_label("Task, in plain words")
        box.fill("pay bob 40")
        box.press("Enter")
        expect(page.locator("#dag g.node.awaiting_approval")).to_have_count(1, timeout=15_000)
        expect(page.get_by_role("status").filter(has_text="waiting")).to_be_visible()

        page.get_by_role("link", name="Inbox").click()
        row = page.locator("tbody tr", has_text="wire_money")
        expect(row).to_contain_text("awaiting approval")
        _shot(page, "inbox")
        row.get_by_role("button", name="approve").click()
        expect(page.get_by_text("Nothing waits for a decision.")).to_be_visible()

        page.get_by_role("link", name="Runs").click()
        page.locator("tbody a").first.click()
        expect(page.locator("#dag g.node.succeeded")).to_have_count(2, timeout=15_000)
        expect(page.locator("#answer")).to_contain_text("40")
        page.get_by_role("link", name="Audit").click()
        expect(page.get_by_text("Chain verified")).to_be_visible()
        _shot(page, "audit")


def test_the_console_asks_for_a_token_then_uses_it(
    page: Page, tmp_path: Path, ember_env: dict[str, str]
) -> None:
    from .conftest import ember

    token = ember(ember_env, "tokens", "create", "ann").stdout.strip()
    with serve_child(tmp_path, ember_env) as base:
        page.goto(base + "/#/tools")
        expect(page.get_by_role("status").first).to_contain_text("needs a token")
        page.get_by_label("Token").fill(token)
        page.get_by_role("button", name="Use").click()
        expect(page.locator("tbody")).to_contain_text("slow_step")
        expect(page.get_by_label("Token")).to_be_hidden()
        page.get_by_role("link", name="Run a task").click()
        box = page.get_by_label("Task, in plain words")
        box.fill("quick")
        box.press("Enter")
        expect(page.get_by_role("status").filter(has_text="succeeded")).to_be_visible()
        expect(page.get_by_role("status").filter(has_text="by ann")).to_be_visible()
