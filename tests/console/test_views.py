"""The console's pages and JSON API, through starlette's TestClient (no browser)."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from console.conftest import CLIENT_SECRET, PERSONAL, PRACTICE, WEBHOOK_SECRET, Seeded
from practiceflow.console import ConsoleContext, create_app
from practiceflow.console.security import SESSION_COOKIE, Guard
from practiceflow.manifest import load_modules
from practiceflow.runner import validate_recipe
from runner._support import MODULES, write_recipe

TOKEN_RE = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')


def _routes(seeded: Seeded) -> list[str]:
    run, old = seeded.held_run, seeded.old_run
    step = f"/console/runs/{run}/steps/lead/resolve"
    return [
        "/console/",
        "/console/runs",
        "/console/runs?status=in_doubt",
        f"/console/runs/{run}",
        f"/console/runs/{old}",
        "/console/attention",
        "/console/budget",
        f"{step}?as=done",
        f"{step}?as=retry",
        "/console/static/console.css",
        "/console/api/",
        "/console/api/recipes",
        "/console/api/runs",
        f"/console/api/runs/{run}",
        f"/console/api/runs/{old}",
        "/console/api/attention",
        "/console/api/budget",
    ]


def _confirm(web: TestClient, run_id: str, step: str, as_: str) -> str:
    page = web.get(f"/console/runs/{run_id}/steps/{step}/resolve", params={"as": as_})
    assert page.status_code == 200, page.text
    found = TOKEN_RE.search(page.text)
    assert found, "the confirm form carries a CSRF token"
    return found.group(1)


def test_no_page_or_api_response_contains_a_secret_or_personal_value(
    web: TestClient, seeded: Seeded
):
    for route in _routes(seeded):
        response = web.get(route)
        assert response.status_code == 200, (route, response.text)
        for hidden in (CLIENT_SECRET, WEBHOOK_SECRET, *PERSONAL):
            assert hidden not in response.text, f"{route} shows {hidden!r}"


def test_run_page_shows_each_step_request_timings_and_errors_in_cli_words(
    web: TestClient, seeded: Seeded
):
    page = web.get(f"/console/runs/{seeded.held_run}").text

    assert "/api/v1/entities" in page  # the rendered request
    assert "ent-9" in page  # an identifier of the output, as the CLI shows it
    assert "held for a person: check the practice&#39;s records" in page
    assert f"practiceflow runs resolve {seeded.held_run} --step lead --as done|retry" in page
    assert "Mark done" in page
    data = web.get(f"/console/api/runs/{seeded.held_run}").json()
    client_step = next(step for step in data["steps"] if step["step"] == "client")
    assert client_step["sent_at"]
    assert client_step["duration_s"] is not None
    assert client_step["request"]["request"]["headers"]["Authorization"] == "***"
    assert client_step["request"]["input"]["entityName"] == "***"
    assert [move["to"] for move in client_step["history"]] == ["pending", "sent", "succeeded"]


def test_attention_lists_the_step_in_doubt_with_what_the_read_back_looked_at(
    web: TestClient, seeded: Seeded
):
    (row,) = web.get("/console/api/attention").json()
    assert (row["run_id"], row["step"]) == (seeded.held_run, "lead")
    assert "has no read-back in the API" in row["reconciliation"]
    page = web.get("/console/attention").text
    assert "what the reconciliation looked at" in page
    assert f"/console/runs/{seeded.held_run}/steps/lead/resolve?as=retry" in page


def test_resolving_through_the_confirm_form_journals_who_and_when(
    web: TestClient, seeded: Seeded, ctx: ConsoleContext
):
    ctx.settled = threading.Event()
    token = _confirm(web, seeded.held_run, "lead", "done")
    before = datetime.now(UTC)

    answer = web.post(
        f"/console/runs/{seeded.held_run}/steps/lead/resolve",
        data={"csrf_token": token, "as": "done", "who": "alice", "note": "seen in the portal"},
        follow_redirects=False,
    )

    assert answer.status_code == 303
    assert answer.headers["location"].startswith(f"/console/runs/{seeded.held_run}?resolved=")
    step = seeded.store.get_step(seeded.held_run, "lead")
    assert step is not None
    assert (step.status, step.resolved_by, step.resolution_note) == (
        "succeeded",
        "alice",
        "seen in the portal",
    )
    assert step.resolved_at is not None
    assert step.resolved_at >= before.replace(microsecond=0)
    last = seeded.store.step_history(seeded.held_run, "lead")[-1]
    assert (last.to_status, last.who) == ("succeeded", "alice")
    assert ctx.settled.is_set()  # serve resumes the run on its next loop
    page = web.get(answer.headers["location"]).text
    assert "resolved as done" in page
    assert "alice" in page
    assert web.get("/console/api/attention").json() == []


def test_a_retry_sends_the_step_back_to_pending(web: TestClient, seeded: Seeded):
    token = _confirm(web, seeded.held_run, "lead", "retry")
    web.post(
        f"/console/runs/{seeded.held_run}/steps/lead/resolve",
        data={"csrf_token": token, "as": "retry", "who": "bob"},
        follow_redirects=False,
    )
    step = seeded.store.get_step(seeded.held_run, "lead")
    assert step is not None
    assert (step.status, step.resolved_by) == ("pending", "bob")


@pytest.mark.parametrize(
    ("case", "token_for"),
    [
        ("no token at all", None),
        ("a token of another form", "client"),
        ("a made-up token", "forged"),
    ],
)
def test_a_post_without_a_valid_csrf_token_is_refused_with_403(
    web: TestClient, guard: Guard, seeded: Seeded, case: str, token_for: str | None
):
    data = {"as": "done", "who": "mallory"}
    web.get("/console/")  # the visitor has a session cookie
    session = web.cookies.get(SESSION_COOKIE)
    assert session
    if token_for == "client":
        data["csrf_token"] = guard.csrf_token(session, f"resolve:{seeded.held_run}:client")
    elif token_for == "forged":
        data["csrf_token"] = "0" * 64

    answer = web.post(f"/console/runs/{seeded.held_run}/steps/lead/resolve", data=data)

    assert answer.status_code == 403, case
    step = seeded.store.get_step(seeded.held_run, "lead")
    assert step is not None
    assert step.status == "in_doubt"


def test_a_post_from_a_session_without_the_cookie_is_refused(ctx: ConsoleContext, seeded: Seeded):
    app = create_app(ctx, Guard())
    with TestClient(app, base_url="http://127.0.0.1") as first:
        token = _confirm(first, seeded.held_run, "lead", "done")
    with TestClient(app, base_url="http://127.0.0.1") as other:  # no session cookie
        answer = other.post(
            f"/console/runs/{seeded.held_run}/steps/lead/resolve",
            data={"csrf_token": token, "as": "done", "who": "mallory"},
        )
    assert answer.status_code == 403


def test_a_post_from_another_origin_is_refused(web: TestClient, seeded: Seeded):
    token = _confirm(web, seeded.held_run, "lead", "done")
    answer = web.post(
        f"/console/runs/{seeded.held_run}/steps/lead/resolve",
        data={"csrf_token": token, "as": "done", "who": "x"},
        headers={"Origin": "http://evil.example"},
    )
    assert answer.status_code == 403


def test_resolving_a_step_that_is_not_in_doubt_says_why(web: TestClient, seeded: Seeded):
    page = web.get(f"/console/runs/{seeded.held_run}/steps/client/resolve", params={"as": "done"})
    assert page.status_code == 409
    assert "can be resolved; it is succeeded" in page.text
    assert 'method="post"' not in page.text


@pytest.mark.parametrize(
    ("query", "recipes"),
    [
        ({}, {"onboard", "other"}),
        ({"recipe": "other"}, {"other"}),
        ({"status": "in_doubt"}, {"onboard"}),
        ({"status": "succeeded", "recipe": "onboard"}, set()),
        ({"date": datetime.now(UTC).date().isoformat()}, {"onboard"}),
    ],
)
def test_the_run_list_filters_by_recipe_status_and_date(
    web: TestClient, query: dict[str, str], recipes: set[str]
):
    rows = web.get("/console/api/runs", params=query).json()
    assert {row["recipe"] for row in rows} == recipes
    page = web.get("/console/runs", params=query)
    assert page.status_code == 200
    assert page.text.count('class="run-link"') == len(rows)


def test_a_bad_filter_is_reported_not_fatal(web: TestClient):
    page = web.get("/console/runs", params={"status": "sideways", "date": "yesterday"})
    assert page.status_code == 200
    assert "status: got &#39;sideways&#39;; valid values are" in page.text
    assert "date: got &#39;yesterday&#39;; expected YYYY-MM-DD" in page.text
    assert web.get("/console/api/runs", params={"status": "sideways"}).status_code == 400


def test_an_unknown_run_is_404_in_the_words_of_the_cli(web: TestClient):
    page = web.get("/console/runs/nope")
    assert page.status_code == 404
    assert "no run &#39;nope&#39; in the state store; see &#39;practiceflow runs list&#39;" in (
        page.text
    )
    assert web.get("/console/api/runs/nope").json() == {
        "error": "no run 'nope' in the state store; see 'practiceflow runs list'"
    }


def test_recipes_show_subscription_health_and_not_recorded_where_the_store_has_nothing(
    web: TestClient,
):
    rows = {row["name"]: row for row in web.get("/console/api/recipes").json()}
    assert rows["onboard"]["status"] == "not served here"
    assert rows["onboard"]["last_event"]["event_id"] == "evt-1"
    assert rows["onboard"]["next_poll"] is None
    page = web.get("/console/").text
    assert "not recorded" in page


class _LiveIntake:
    """The part of a live ``serve`` intake the console reads: the next poll time."""

    def __init__(self, when: datetime) -> None:
        self.when = when

    def next_poll(self, trigger_key: str) -> datetime | None:
        return self.when if trigger_key == "test_event" else None


def test_recipes_show_recorded_subscription_health_and_the_live_next_poll(
    seeded: Seeded, tmp_path: Path
):
    store = seeded.store
    registry = load_modules([MODULES])
    recipe = validate_recipe(
        write_recipe(
            tmp_path,
            "  - id: noop\n    use: write_jsonl\n    with: {path: out.jsonl, record: {}}\n",
        ),
        registry=registry,
    )
    store.save_subscription(
        PRACTICE, "test_event", "sub-9", "test.event", "http://127.0.0.1:9/hooks/t9", "s9",
        "tok-t9", "active",
    )  # fmt: skip
    ctx = ConsoleContext(store, PRACTICE, [recipe], registry=registry, who="tester")
    with TestClient(create_app(ctx, Guard()), base_url="http://127.0.0.1") as web:
        row = web.get("/console/api/recipes").json()[0]
        assert row["subscription"]["last_delivery"] is None
        assert row["subscription"]["resubscribes"] == 0
        assert row["next_poll"] is None

    store.record_event(
        PRACTICE, "test_event", "test.event", "d1", {"source": "webhook", "data": {}}
    )
    store.record_test_delivery(PRACTICE, "test_event")
    store.count_resubscribe(PRACTICE, "test_event")
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    ctx.intake, ctx.stop = _LiveIntake(when), threading.Event()
    health = store.subscription_health(PRACTICE, "test_event")
    assert health.last_delivery_at is not None
    assert health.last_test_delivery_at is not None
    with TestClient(create_app(ctx, Guard()), base_url="http://127.0.0.1") as web:
        row = web.get("/console/api/recipes").json()[0]
        sub = row["subscription"]
        assert sub["last_delivery"] == health.last_delivery_at.isoformat(timespec="seconds")
        assert sub["last_test_delivery"] == health.last_test_delivery_at.isoformat(
            timespec="seconds"
        )
        assert sub["resubscribes"] == 1
        assert row["next_poll"] == "2030-01-02T03:04:05+00:00"
        page = web.get("/console/").text
    assert "last delivery: " + sub["last_delivery"] in page
    assert "last test delivery: " + sub["last_test_delivery"] in page
    assert "re-subscribes: 1" in page
    assert "2030-01-02T03:04:05+00:00" in page


def test_budget_counts_requests_per_minute_and_hour_against_the_limits(web: TestClient):
    data = web.get("/console/api/budget").json()
    assert data["limits"] == {"per_minute": 60, "per_hour": 1000, "per_day": 10000}
    assert sum(bucket["requests"] for bucket in data["per_minute"]) == 4
    assert sum(bucket["requests"] for bucket in data["per_hour"]) == 6
    assert data["last_day"] == 6
    assert len(data["per_minute"]) == 60
    assert len(data["per_hour"]) == 24
    page = web.get("/console/budget").text
    assert page.count("<svg") == 3
    assert 'class="limit"' in page
    assert "not recorded" in page  # no recipes: no forecast


def test_a_token_is_required_when_one_is_configured(ctx: ConsoleContext):
    app = create_app(ctx, Guard(token="s3cret-console-token"))
    with TestClient(app, base_url="http://127.0.0.1") as web:
        assert web.get("/console/").status_code == 401
        assert web.get("/console/api/runs").status_code == 401
        bearer = {"Authorization": "Bearer s3cret-console-token"}
        assert web.get("/console/api/runs", headers=bearer).status_code == 200
        first = web.get("/console/runs?token=s3cret-console-token", follow_redirects=False)
        assert first.status_code == 303
        assert first.headers["location"] == "/console/runs"  # the token leaves the URL
        page = web.get("/console/runs")  # the cookie carries it now
        assert page.status_code == 200
        assert "s3cret-console-token" not in page.text


def test_an_event_no_trigger_describes_is_shown_with_every_value_masked(
    web: TestClient, seeded: Seeded
):
    """An assistant's confirmed arguments (``source: mcp``) have no trigger schema to say
    what is personal: every value is masked, on the page and in the JSON."""
    origin = {
        "event_key": "assistant.create_client",
        "event_id": "mcp-1",
        "source": "mcp",
        "payload": {"entityName": "Zebediah Quux-Worthington", "email": "zq@example.org"},
    }
    run_id, _ = seeded.store.start_run(PRACTICE, "assistant: create_client", "mcp-1", origin=origin)
    for route in (f"/console/runs/{run_id}", f"/console/api/runs/{run_id}"):
        response = web.get(route)
        assert response.status_code == 200, response.text
        assert "Zebediah" not in response.text
        assert "zq@example.org" not in response.text
        assert "entityName" in response.text  # the field is named, its value is not shown
