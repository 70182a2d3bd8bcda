"""Any JSON a sender signs is stored (issue 35): non-standard numbers (``NaN``,
``Infinity``, a number too large for a float) and lone surrogates (a name cut in the middle
of an emoji by a UTF-16 service) are kept as text, the delivery acknowledged and its event
run; before, they were a 500, neither stored nor listed."""

from __future__ import annotations

from typing import Any

import pytest
from trigger_helpers import post_delivery

from practiceflow.triggers import load_definition

SECRET = "whsec_test_secret_value"
TOKEN = "tok-any-json"


@pytest.fixture
def hook(store, served, receiver) -> str:  # type: ignore[no-untyped-def]
    url = served.url + "/hooks/" + TOKEN
    store.save_subscription(
        "p", "proposal_accepted", "sub-1", "proposal.accepted", url, SECRET, TOKEN, "active"
    )
    receiver.bind("p", "proposal_accepted", load_definition("proposal_accepted").webhook, {})
    return url


#: The body as signed, and what the stored ``data`` holds.
CASES: list[tuple[bytes, dict[str, Any]]] = [
    (b'{"data": {"proposalKey": "p1", "total": NaN}}', {"proposalKey": "p1", "total": "NaN"}),
    (
        b'{"data": {"proposalKey": "p2", "low": -Infinity, "high": Infinity}}',
        {"proposalKey": "p2", "low": "-Infinity", "high": "Infinity"},
    ),
    (b'{"data": {"proposalKey": "p3", "total": 1e999}}', {"proposalKey": "p3", "total": "1e999"}),
    (
        b'{"data": {"proposalKey": "p4", "name": "Ann \\ud83d", "\\udc00k": 1}}',
        {"proposalKey": "p4", "name": "Ann \\ud83d", "\\udc00k": 1},
    ),
    (b'{"data": {"proposalKey": "p5", "total": 1.5e300}}', {"proposalKey": "p5", "total": 1.5e300}),
]


IDS = ["nan", "infinity", "1e999", "surrogate", "big"]


@pytest.mark.parametrize(("raw", "data"), CASES, ids=IDS)
def test_a_signed_delivery_with_non_standard_json_is_stored_as_text_and_pending(
    store, hook, raw: bytes, data: dict[str, Any]
) -> None:  # type: ignore[no-untyped-def]
    answer = post_delivery(hook, SECRET, raw, event_id="evt-odd")
    assert answer.status_code == 200, answer.text
    assert answer.headers["X-Practiceflow-Stored"] == "true"
    (event,) = store.pending_events("p")
    assert event.payload["raw"]["data"] == data
