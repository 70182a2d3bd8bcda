"""lastUpdated goes out as UTC ISO 8601; naive and future values never leave the machine."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import responses
from responses import matchers

from practiceflow.api import Client, to_utc_param
from practiceflow.api.params import encode_params
from practiceflow.errors import ConfigError

from .conftest import BASE, NOW

AEST = timezone(timedelta(hours=10))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(datetime(2026, 11, 22, 10, 0, tzinfo=UTC), "2026-11-22T10:00:00Z", id="utc"),
        pytest.param(datetime(2026, 11, 22, 20, 0, tzinfo=AEST), "2026-11-22T10:00:00Z", id="aest"),
        pytest.param(
            datetime(2026, 11, 22, 10, 0, 5, 999_999, tzinfo=UTC),
            "2026-11-22T10:00:05Z",
            id="fraction-dropped",
        ),
        pytest.param("2026-11-22T20:00:00+10:00", "2026-11-22T10:00:00Z", id="text-offset"),
        pytest.param("2026-11-22T10:00:00Z", "2026-11-22T10:00:00Z", id="text-z"),
        pytest.param(NOW, "2026-11-22T12:00:00Z", id="exactly-now"),
    ],
)
def test_aware_values_become_utc_text(value: datetime | str, expected: str) -> None:
    assert to_utc_param(value, now=lambda: NOW) == expected


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        pytest.param(datetime(2026, 11, 22, 10, 0), "without a time zone", id="naive"),
        pytest.param("2026-11-22T10:00:00", "without a time zone", id="naive-text"),
        pytest.param(NOW + timedelta(seconds=1), "in the future", id="future"),
        pytest.param("2027-01-01T00:00:00Z", "in the future", id="future-text"),
        pytest.param("yesterday", "expected an ISO 8601 date-time", id="garbage"),
        pytest.param(1732269600, "expected an aware datetime", id="number"),
    ],
)
def test_bad_values_are_refused(value: Any, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as info:
        to_utc_param(value, now=lambda: NOW)
    assert str(info.value).startswith("lastUpdated:")


@pytest.mark.parametrize(
    "value",
    [datetime(2026, 11, 22, 10, 0), NOW + timedelta(days=1), "2026-11-22T10:00:00"],
    ids=["naive", "future", "naive-text"],
)
def test_client_sends_nothing_for_a_bad_last_updated(
    rsps: responses.RequestsMock, client: Client, value: Any
) -> None:
    with pytest.raises(ConfigError):
        client.get("/api/v1/groups/list", params={"lastUpdated": value})
    with pytest.raises(ConfigError):
        list(client.paginate("/api/v1/groups/list", params={"lastUpdated": value}))
    assert len(rsps.calls) == 0
    assert client.budget.status is None


def test_client_sends_last_updated_as_utc_and_booleans_lower_case(
    rsps: responses.RequestsMock, client: Client
) -> None:
    rsps.get(
        f"{BASE}/api/v1/groups/list",
        json=[],
        match=[
            matchers.query_param_matcher(
                {
                    "lastUpdated": "2026-11-22T10:00:00Z",
                    "includeMembers": "true",
                    "isActive": "false",
                    "name": "Smith",
                }
            )
        ],
    )
    client.get(
        "/api/v1/groups/list",
        params={
            "lastUpdated": datetime(2026, 11, 22, 20, 0, tzinfo=AEST),
            "includeMembers": True,
            "isActive": False,
            "name": "Smith",
            "groupCode": None,
        },
    )


def test_other_dates_are_encoded_but_may_be_in_the_future() -> None:
    from datetime import date

    encoded = encode_params(
        {"startDate": date(2026, 1, 1), "endDate": NOW + timedelta(days=30)}, now=lambda: NOW
    )
    assert encoded == {"startDate": "2026-01-01", "endDate": "2026-12-22T12:00:00Z"}
