"""``Client.hooked(RequestHooks(...))``, the one seam the runner journals through:
``on_send`` is called once the rate budget admitted a request and immediately before it
leaves, again for each retry and each page; never while the request waits for the budget;
an exception it raises sends nothing. ``on_refused`` is told of each 429."""

from __future__ import annotations

import pytest
import responses
from responses import matchers

from practiceflow.api import Client, RateLimits
from practiceflow.api.client import RequestHooks
from practiceflow.testing import FakeClock

BILLS = "https://api.test/anz/api/v1/bills"
BODY = {"entityKey": "k-1", "lineItems": [{"amount": 10}]}


def test_on_send_comes_after_the_budgets_wait_and_before_the_request_leaves(
    rsps: responses.RequestsMock, make_client, clock: FakeClock
) -> None:
    client: Client = make_client(limits=RateLimits(per_minute=1, per_hour=60, per_day=1440))
    events: list[tuple[str, float]] = []
    rsps.add_callback(
        responses.POST,
        BILLS,
        callback=lambda request: (
            events.append(("sent", clock.monotonic())),
            (201, {}, '{"billKey": "b"}'),
        )[1],
        match=[matchers.json_params_matcher(BODY)],
    )
    rsps.get("https://api.test/anz/api/v1/groups/list", json=[])
    client.get("/api/v1/groups/list")  # spends the minute's only slot

    hooked = client.hooked(
        RequestHooks(on_send=lambda _: events.append(("admitted", clock.monotonic())))
    )
    answer = hooked.request("POST", "/api/v1/bills", json=BODY)

    assert answer.data == {"billKey": "b"}
    assert clock.sleeps == [pytest.approx(60.001)]  # waited for the budget first
    assert [what for what, _ in events] == ["admitted", "sent"]
    assert events[0][1] >= 1000 + 60  # admitted only after the wait


def test_on_send_is_called_again_for_a_request_sent_again_after_a_429(
    rsps: responses.RequestsMock, client: Client, clock: FakeClock
) -> None:
    rsps.post(BILLS, status=429, headers={"Retry-After": "3"}, json={"status": 429})
    rsps.post(BILLS, status=201, json={"billKey": "b"})
    admitted: list[float] = []

    hooked = client.hooked(RequestHooks(on_send=lambda _: admitted.append(clock.monotonic())))
    hooked.request("POST", "/api/v1/bills", json=BODY)

    assert admitted == [1000, 1003]
    assert len(rsps.calls) == 2


class Refused(Exception):
    pass


def test_an_on_send_that_raises_sends_nothing(rsps: responses.RequestsMock, client: Client) -> None:
    def refuse(_: object) -> None:
        raise Refused

    with pytest.raises(Refused):
        client.hooked(RequestHooks(on_send=refuse)).request("POST", "/api/v1/bills", json=BODY)
    assert len(rsps.calls) == 0


def test_a_hooked_client_pages_like_the_client_and_tells_the_hook_of_every_page(
    rsps: responses.RequestsMock, client: Client
) -> None:
    groups = "https://api.test/anz/api/v1/groups/list"
    rsps.get(
        groups,
        json=[{"groupKey": "g1"}, {"groupKey": "g2"}],
        match=[matchers.query_param_matcher({"pageNumber": "1", "pageSize": "2"})],
    )
    rsps.get(
        groups,
        json=[{"groupKey": "g3"}],
        match=[matchers.query_param_matcher({"pageNumber": "2", "pageSize": "2"})],
    )
    told: list[dict[str, object]] = []

    hooked = client.hooked(RequestHooks(on_send=told.append))
    rows = list(hooked.paginate("/api/v1/groups/list", page_size=2))
    hooked.close()  # shares the session: closing the twin closes nothing

    assert [row["groupKey"] for row in rows] == ["g1", "g2", "g3"]
    assert [(t["method"], t["path"], dict(t["params"] or {})["pageNumber"]) for t in told] == [
        ("GET", "/api/v1/groups/list", 1),
        ("GET", "/api/v1/groups/list", 2),
    ]
    assert hooked.budget is client.budget
    rsps.get(groups, json=[])
    assert client.get("/api/v1/groups/list") == []  # the original still sends


def test_on_refused_is_told_of_a_429_before_the_request_is_sent_again(
    rsps: responses.RequestsMock, client: Client
) -> None:
    rsps.post(BILLS, status=429, headers={"Retry-After": "1"}, json={"status": 429})
    rsps.post(BILLS, status=201, json={"billKey": "b"})
    events: list[str] = []

    hooks = RequestHooks(
        on_send=lambda _: events.append("sent"), on_refused=lambda: events.append("refused")
    )
    client.hooked(hooks).request("POST", "/api/v1/bills", json=BODY)

    assert events == ["sent", "refused", "sent"]
