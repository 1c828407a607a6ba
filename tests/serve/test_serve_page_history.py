"""The page's search box, fork from a message and regenerate, in Debian's chromium (as tests/serve/test_serve_page.py)."""

from __future__ import annotations

import requests
from test_serve_page import TOKEN, browser_page, served  # noqa: F401  (the fixture)


def test_in_a_browser_search_opens_the_hit_fork_starts_a_session_and_regenerate_answers_again(served):  # noqa: F811
    base, _ledger = served
    with browser_page(base, viewport={"width": 1100, "height": 800}) as (page, errors):
        from playwright.sync_api import expect

        page.fill("#session", "trip")
        for message in ("Plan the Lisbon trip", "Find a hotel by the river"):
            page.fill("#message", message)
            page.click("#send button[type=submit]")
            expect(page.locator("#answer")).to_have_attribute("data-status", "completed")
        history = page.locator("#history .message")
        expect(history).to_have_count(4)

        page.fill("#session", "other")
        page.click("#open-session")
        page.fill("#query", "LISBON trip!")
        page.click("#search button")
        hits = page.locator("#hits .hit")
        expect(hits).to_have_count(2)
        expect(hits.first).to_contain_text("trip #")
        hits.nth(1).click()
        expect(page.locator("#session")).to_have_value("trip")
        expect(page.locator("#history .message.found")).to_have_count(1)
        expect(page.locator("#history .message.found")).to_contain_text("Lisbon")

        history.nth(1).get_by_role("button", name="Fork here").click()
        expect(page.locator("#status")).to_contain_text("forked into trip-fork-")
        expect(history).to_have_count(2)
        expect(history.nth(1)).to_contain_text("echo: Plan the Lisbon trip")
        assert page.locator("#session").input_value().startswith("trip-fork-")

        page.fill("#session", "trip")
        page.click("#open-session")
        expect(history).to_have_count(4)
        page.click("#regenerate")
        expect(page.locator("#answer")).to_have_attribute("data-status", "completed")
        expect(history).to_have_count(4)  # the old reply is inactive, not shown
        expect(history.last).to_contain_text("echo: Find a hotel by the river")
        expect(page.locator("#status")).to_contain_text("completed")
        stored = requests.get(
            base + "/agents/assistant/sessions/trip/messages", params={"include_inactive": "true"}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
        ).json()["messages"]
        assert [(m["content"], m["status"]) for m in stored][2:] == [
            ("Find a hotel by the river", "inactive"),
            ("echo: Find a hotel by the river", "inactive"),
            ("Find a hotel by the river", "active"),
            ("echo: Find a hotel by the river", "active"),
        ]
        assert errors == []
