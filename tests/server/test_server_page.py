"""The web page at ``/``, driven by Playwright in the system's Chromium against a real uvicorn:
a question asked in two modes side by side, an entity clicked, its neighbourhood drawn, a
community opened, a file uploaded with its progress followed; and the page's own files and
headers through httpx.

Playwright's own browser download cannot be used here: the test runs the Chromium the system
has (Debian's ``chromium`` package, which ``.ci/run`` installs). Without one it fails when the
``CI`` variable is set and is skipped, saying why, otherwise."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from server_support import API_KEY, AUTH, RunningServer, open_app

BROWSERS = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")


def system_chromium() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def required_chromium() -> str:
    """The system's Chromium; without one, a failure under ``CI`` and a skip elsewhere, saying why."""
    executable = system_chromium()
    if executable is None:
        reason = f"no Chromium found (looked for {', '.join(BROWSERS)}); install it with `apt-get install chromium`"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return executable


@pytest.fixture
def browser():
    executable = required_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        yield launched
        launched.close()


@pytest.fixture
def running(built, fresh):
    app = open_app([f"light={fresh('lightrag')}", f"graph={built('graphrag')}", f"tree={built('raptor')}"], "--api-key", API_KEY)
    with RunningServer(app) as server:
        yield server


def signed_in(browser, running, workspace, **options):
    """A page of the running server with the API key typed in and ``workspace`` picked."""
    page = browser.new_page(**options)
    page.goto(running.url + "/")
    page.fill("#api-key", API_KEY)
    page.locator("#api-key").dispatch_event("change")
    page.wait_for_selector(f"#workspace option[value={workspace}]", state="attached")
    page.select_option("#workspace", workspace)
    return page


def test_ask_in_two_modes_click_an_entity_and_see_its_neighbourhood(browser, running, tmp_path):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(running.url + "/")
    expect(page.locator("#status")).to_contain_text("needs its API key")  # the page says what is missing
    page.fill("#api-key", API_KEY)
    page.locator("#api-key").dispatch_event("change")
    page.wait_for_selector("#workspace option[value=light]", state="attached")
    errors.clear()  # the 401 of the first load, before the key
    page.select_option("#workspace", "light")
    columns = page.locator("#columns .column")
    assert columns.count() == 2
    modes = [columns.nth(i).locator("select.mode").input_value().split("\x00")[1] for i in range(2)]
    assert modes == ["hybrid", "local"]

    page.fill("#question", "Who drew the first map of the islands?")
    page.click("#ask-form button[type=submit]")
    for i in range(2):
        columns.nth(i).locator("li.hit").first.wait_for()
        assert columns.nth(i).locator("li.hit").count() == 4
        assert "mode " + modes[i] in columns.nth(i).locator(".results > p.muted").first.inner_text()
    first_hit = columns.nth(1).locator("li.hit").first
    assert first_hit.locator(".title").inner_text() == "Ilse Varn, cartographer"
    float(first_hit.locator(".score").inner_text())  # a score

    chip = first_hit.locator("button.chip.entity[data-entity='ilse varn']")
    chip.wait_for()
    chip.click()
    expect(page.locator("#entity-info h3")).to_have_text("Ilse Varn")  # (the page's policy forbids waiting on evaluated code)
    expect(page.locator("#cy")).not_to_have_attribute("data-node-count", "0")
    shown = int(page.locator("#cy").get_attribute("data-node-count"))
    listed = page.locator("#neighbours li").count()
    assert listed >= 1 and shown == listed + 1  # the entity and its neighbours, drawn and listed
    assert page.locator("#cy canvas").count() >= 1  # Cytoscape drew them
    page.screenshot(path=str(tmp_path / "neighbourhood.png"), full_page=True)
    assert (tmp_path / "neighbourhood.png").stat().st_size > 10_000

    neighbour = page.locator("#neighbours li button").first
    name = neighbour.inner_text()
    neighbour.click()  # walk on to a neighbour
    expect(page.locator("#entity-info h3")).to_have_text(name)
    assert not errors, errors


def test_communities_and_tree_nodes_are_browsed(browser, running, tmp_path):
    from playwright.sync_api import expect

    page = signed_in(browser, running, "graph", viewport={"width": 1400, "height": 1000})
    page.click("[data-tab=groups]")
    page.locator("#group-list .group").first.wait_for()
    assert page.locator("#groups-page").inner_text().endswith("of 3 groups")
    first = page.locator("#group-list .group").first
    children = first.locator("button.chip.group", has_text="↓").count()
    members = first.locator("button.chip.entity").count()
    first.locator("button.chip.draw").click()  # the community as a tree: itself, its child groups, its members
    expect(page.locator("#cy")).to_have_attribute("data-node-count", str(1 + children + members))
    page.screenshot(path=str(tmp_path / "community.png"), full_page=True)
    page.click("[data-tab=groups]")
    first.locator("button.chip.group", has_text="↓").first.click()
    page.wait_for_selector("#group-list .group h4:has-text('L1')")
    member = page.locator("#group-list .group button.chip.entity").first
    name = member.inner_text()
    member.click()  # a member: its neighbourhood
    expect(page.locator("#entity-info h3")).to_have_text(name)
    expect(page.locator("#cy")).not_to_have_attribute("data-node-count", "0")
    page.select_option("#workspace", "tree")
    page.click("[data-tab=groups]")
    page.wait_for_selector("#groups-page:has-text('tree nodes')")
    assert page.locator("#group-list .group .chip.passage").count() >= 2
    page.screenshot(path=str(tmp_path / "tree.png"), full_page=True)


def test_a_file_is_uploaded_with_its_progress_followed(browser, running, tmp_path):
    note = tmp_path / "bees.md"
    note.write_text("# Bees\n\nBrann Tolle keeps bees on the cliffs of Oskel.\n", encoding="utf-8")
    page = signed_in(browser, running, "light")
    page.click("[data-tab=documents]")
    page.wait_for_selector("#documents-table tbody tr")
    page.set_input_files("#files", str(note))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-status:has-text('1 inserted')", timeout=60_000)
    assert page.locator("#upload-files li").inner_text() == "bees.md: 1 documents"
    progress = page.locator("#upload-progress")
    assert progress.get_attribute("value") == progress.get_attribute("max")  # the bar is full
    page.wait_for_selector("#documents-table tbody tr:has-text('bees.md')")
    assert "done" in page.locator("#documents-table tbody tr:has-text('bees.md')").inner_text()


def test_the_page_and_its_files_need_no_key_and_work_offline(built, client_for):
    client = client_for([f"w={built('naive')}"], "--api-key", API_KEY)
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    html = page.text
    assert "http://" not in html and "https://" not in html  # nothing fetched from elsewhere
    for path in ("/ui/app.js", "/ui/style.css", "/ui/vendor/cytoscape/cytoscape.min.js", "/ui/vendor/cytoscape/LICENSE"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert client.get("/ui/../app.py").status_code == 404
    assert client.get("/ui/%2e%2e/app.py").status_code == 404
    assert client.get("/workspaces").status_code == 401 and client.get("/workspaces", headers=AUTH).status_code == 200


def test_the_vendored_library_is_the_recorded_version():
    import hashlib

    folder = Path(__file__).resolve().parents[2] / "packages/rhizome-server/src/rhizome/server/page/vendor"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    digest = hashlib.sha256((folder / "cytoscape/cytoscape.min.js").read_bytes()).hexdigest()
    assert digest in readme  # the file is the one the README records (version and how to update it)
    assert "Permission is hereby granted" in (folder / "cytoscape/LICENSE").read_text(encoding="utf-8")


def test_without_a_browser_ci_fails_and_a_developer_is_told_why(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no Chromium found"):
        required_chromium()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        required_chromium()
