"""S7, degraded: the closest section verbatim, never a model call, with the wire shapes
of docs/internals.md."""

from __future__ import annotations

import re

from steps import degraded

from .conftest import load_event


def test_degraded_answers_with_the_closest_section_verbatim(aws):
    out = degraded.handler(load_event("degraded"), None)
    body = out["body"]
    assert out["statusCode"] == 200 and body["degraded"] is True
    assert body["reply"].startswith("Reduced service: here is the closest section of this site.")
    assert "60, 120, 300 or 600 seconds" in body["reply"]
    assert body["sources"][0]["heading"] not in body["reply"]  # the trail is the link, once
    (source,) = body["sources"]
    assert source["page"] == "/posts/waf.html" and set(source) == {"page", "heading", "anchor"}
    # The section's own link: a Markdown page's heading slug, as the demo site renders it.
    assert source["anchor"] == re.sub(r"[^a-z0-9]+", "-", source["heading"].split(" > ")[-1]
                                      .lower()).strip("-")  # fmt: skip


def test_degraded_never_embeds_or_calls_the_model(aws, responder, monkeypatch):
    from steps.lib.providers import models

    def boom(s):
        raise AssertionError("degraded mode must not embed")

    monkeypatch.setattr(models, "query_embedder", boom)
    degraded.handler(load_event("degraded"), None)
    assert responder.calls == []


def test_degraded_without_a_match_says_so(aws):
    event = load_event("degraded")
    event["request"]["message"] = "zzzz qqqq"
    out = degraded.handler(event, None)
    assert out["body"]["sources"] == [] and out["body"]["reply"].startswith("Reduced service")


def test_a_paced_day_says_when_more_budget_is_released(aws):
    event = load_event("degraded") | {"reason": "paced", "releasedAt": "2026-11-29T17:52Z"}
    body = degraded.handler(event, None)["body"]
    assert "more is released at 17:52 UTC" in body["reply"]
    assert body["releasedAt"] == "2026-11-29T17:52Z"  # the widget's paced state reads it
    assert "60, 120, 300 or 600 seconds" in body["reply"]  # still the closest section
    event["request"]["message"] = "zzzz qqqq"
    assert "17:52 UTC" in degraded.handler(event, None)["body"]["reply"]


def test_a_spent_day_names_no_release_time(aws):
    event = load_event("degraded") | {"reason": "ceiling", "releasedAt": None}
    body = degraded.handler(event, None)["body"]
    assert "released" not in body["reply"] and "releasedAt" not in body


def test_degraded_links_up_to_two_other_pages_with_their_titles(aws):
    event = load_event("degraded")
    event["request"]["message"] = "Which rate limit windows and cost ceilings does this site use?"
    body = degraded.handler(event, None)["body"]
    assert body["sources"][0]["page"] == "/posts/waf.html"
    # The other pages that share a term (both here), with the titles of their first heading.
    assert sorted(body["also"], key=lambda a: a["page"]) == [
        {"page": "/index.html", "title": "Home"},
        {"page": "/posts/budgets.html", "title": "Budgets and ceilings"},
    ]


def test_a_page_that_shares_no_term_is_never_linked(aws):
    body = degraded.handler(load_event("degraded"), None)["body"]
    assert all(a["page"] != "/posts/budgets.html" for a in body["also"])


def test_degraded_without_a_match_links_nothing(aws):
    event = load_event("degraded")
    event["request"]["message"] = "zzzz qqqq"
    assert "also" not in degraded.handler(event, None)["body"]


def test_summarise_this_page_quotes_the_page_it_is_asked_on(aws):
    event = load_event("degraded")
    event["request"] |= {"message": "Summarise this page", "page": "/posts/budgets.html"}
    body = degraded.handler(event, None)["body"]
    assert body["sources"][0]["page"] == "/posts/budgets.html"
    assert "A reservation holds the worst-case cost" in body["reply"]
    event["request"]["page"] = None  # from no page: a plain lexical match ("page views")
    assert degraded.handler(event, None)["body"]["sources"][0]["page"] != "/posts/budgets.html"
