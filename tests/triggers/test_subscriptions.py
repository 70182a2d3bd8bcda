"""Subscription lifecycle over faked HTTP: body sent, secret kept, in-doubt, heal, remove."""

from __future__ import annotations

import json
import logging

import pytest
import responses
from responses import matchers
from trigger_helpers import AUTH, BASE, offline_client

from practiceflow.errors import InDoubtError
from practiceflow.triggers import SubscriptionInDoubt, SubscriptionManager

PUBLIC = "https://hooks.example.com"
SECRET = "whsec_from_the_api"


def manager(store):
    return SubscriptionManager(offline_client(), store, "p", PUBLIC, sleep=lambda s: None)


@responses.activate(assert_all_requests_are_fired=True)
def test_subscribe_sends_both_url_spellings_and_keeps_the_secret_only_in_the_store(store, caplog):
    def check_body(request):
        body = json.loads(request.body)
        assert body["targetUrl"] == body["hookUrl"]
        assert body["targetUrl"].startswith(PUBLIC + "/hooks/")
        assert body["webhookEvent"] == "proposal.accepted"
        return 201, {}, json.dumps({"id": "sub-1", "webhookSecret": SECRET})

    responses.add_callback(
        responses.POST, BASE + "/api/v1/webhooks", check_body, match=[matchers.header_matcher(AUTH)]
    )
    with caplog.at_level(logging.DEBUG):
        record = manager(store).ensure("proposal_accepted", "proposal.accepted")
    assert (record.status, record.subscription_id, record.secret) == ("active", "sub-1", SECRET)
    assert SECRET not in repr(record)
    assert SECRET not in caplog.text
    # Asking again with the same event sends nothing.
    assert (
        manager(store).ensure("proposal_accepted", "proposal.accepted").subscription_id == "sub-1"
    )


@responses.activate
def test_a_lost_answer_is_recorded_in_doubt_and_never_repeated(store):
    responses.add(responses.POST, BASE + "/api/v1/webhooks", status=500)
    with pytest.raises(InDoubtError):
        manager(store).ensure("t", "proposal.accepted")
    row = store.get_subscription("p", "t")
    assert row is not None
    assert row.status == "in_doubt"
    with pytest.raises(SubscriptionInDoubt, match="not repeated"):
        manager(store).ensure("t", "proposal.accepted")
    assert len(responses.calls) == 1
    assert manager(store).remove("t", forget_only=True)
    assert store.get_subscription("p", "t") is None


@pytest.mark.parametrize(("status", "kept"), [(400, False), (403, False)])
@responses.activate
def test_a_refused_subscribe_leaves_nothing_behind(store, status, kept):
    responses.add(responses.POST, BASE + "/api/v1/webhooks", status=status, json={"status": status})
    with pytest.raises(Exception):  # noqa: B017, PT011 - the ApiError subclass varies
        manager(store).ensure("t", "proposal.accepted")
    assert (store.get_subscription("p", "t") is not None) is kept


@responses.activate
def test_a_vanished_subscription_is_found_by_the_test_delivery_and_healed(store):
    store.save_subscription(
        "p", "t", "old", "proposal.accepted", PUBLIC + "/hooks/a", "s", "a", "active"
    )
    responses.add(
        responses.POST, BASE + "/api/v1/webhooks/old/test", status=404, json={"status": 404}
    )
    responses.add(
        responses.POST,
        BASE + "/api/v1/webhooks",
        status=201,
        json={"id": "new", "webhookSecret": "s2"},
    )
    assert manager(store).heal("t", "proposal.accepted") == "resubscribed"
    row = store.get_subscription("p", "t")
    assert row is not None
    assert (row.subscription_id, row.status) == ("new", "active")
    assert row.path_token != "a"
    assert store.subscription_health("p", "t").resubscribes == 1


@pytest.mark.parametrize("status", [200, 404])
@responses.activate
def test_remove_deletes_and_forgets_even_when_already_gone(store, status):
    store.save_subscription(
        "p", "t", "sub", "proposal.accepted", PUBLIC + "/hooks/a", "s", "a", "active"
    )
    responses.add(responses.DELETE, BASE + "/api/v1/webhooks/sub", status=status, json={})
    assert manager(store).remove("t")
    assert store.get_subscription("p", "t") is None


@pytest.mark.parametrize("status", ["pending", "in_doubt"])
@responses.activate
def test_a_subscription_in_doubt_is_forgotten_only_when_a_person_says_so(store, status):
    # pending: the process died while the subscribe was in flight; its id is unknown too.
    url = PUBLIC + "/hooks/a"
    store.save_subscription("p", "t", None, "proposal.accepted", url, "", "a", status)
    with pytest.raises(SubscriptionInDoubt, match="--forget"):
        manager(store).remove("t")
    assert store.get_subscription("p", "t") is not None
    assert manager(store).remove("t", forget_only=True)
    assert store.get_subscription("p", "t") is None
    assert len(responses.calls) == 0
