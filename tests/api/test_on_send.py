"""``Client.request(on_send=...)``: called once the rate budget admitted the request and
immediately before it leaves, again for each retry; never while the request waits for the
budget; an exception it raises sends nothing."""

from __future__ import annotations

import pytest
import responses
from responses import matchers

from practiceflow.api import Client, RateLimits

from .conftest import FakeClock

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
        callback=lambda request: (events.append(("sent", clock())), (201, {}, '{"billKey": "b"}'))[
            1
        ],
        match=[matchers.json_params_matcher(BODY)],
    )
    rsps.get("https://api.test/anz/api/v1/groups/list", json=[])
    client.get("/api/v1/groups/list")  # spends the minute's only slot

    answer = client.request(
        "POST", "/api/v1/bills", json=BODY, on_send=lambda: events.append(("admitted", clock()))
    )

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

    client.request("POST", "/api/v1/bills", json=BODY, on_send=lambda: admitted.append(clock()))

    assert admitted == [1000, 1003]
    assert len(rsps.calls) == 2


class Refused(Exception):
    pass


def test_an_on_send_that_raises_sends_nothing(rsps: responses.RequestsMock, client: Client) -> None:
    def refuse() -> None:
        raise Refused

    with pytest.raises(Refused):
        client.request("POST", "/api/v1/bills", json=BODY, on_send=refuse)
    assert len(rsps.calls) == 0
