"""``practiceflow.service.serve``: the receiver listens when it returns and nothing is sent
until the service starts; the early socket is the one served on; a stop unsubscribes only
when asked to; and the downtime since the last sign of life is listed as it starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from practiceflow.api import Client, RateLimits
from practiceflow.manifest import load_modules
from practiceflow.runner import ValidRecipe, validate_recipe
from practiceflow.service import ServeOptions, serve
from practiceflow.service.heartbeat import mark_alive
from practiceflow.service.netaddr import bind_listen
from practiceflow.state import StateStore, open_store
from practiceflow.testing import SandboxHandle

pytestmark = pytest.mark.integration

RECIPE = """\
name: new client -> first bill
trigger: {use: any_webhook_event, mode: webhook, with: {event: client.created}}
steps:
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.body.data.entityKey }}"
      lineItems: [{amount: 100, taxPercent: 10, narration: Onboarding fee}]
"""
LIMITS = RateLimits(per_minute=10_000, per_hour=100_000, per_day=1_000_000)


@pytest.fixture
def recipe(tmp_path: Path) -> ValidRecipe:
    path = tmp_path / "first_bill.yaml"
    path.write_text(RECIPE, encoding="utf-8")
    return validate_recipe(path, registry=load_modules())


@pytest.fixture
def parts(sandbox: SandboxHandle, tmp_path: Path) -> Iterator[tuple[StateStore, Client, str]]:
    client_id, secret = sandbox.credentials("anz", "rw")
    with (
        Client(client_id, secret, base_url=sandbox.base_url("anz"), limits=LIMITS) as client,
        open_store(str(tmp_path / "state.db")) as store,
    ):
        yield store, client, client_id


def _subscriptions(sandbox: SandboxHandle) -> list[dict[str, object]]:
    rows = sandbox.admin("GET", "/_admin/records/subscriptions")
    return [row for row in rows if row.get("status", "active") == "active"]


def test_the_receiver_listens_when_serve_returns_and_nothing_is_sent_before_start(
    sandbox: SandboxHandle, parts: tuple[StateStore, Client, str], recipe: ValidRecipe
) -> None:
    store, client, practice = parts
    service = serve([recipe], store, client, practice, ServeOptions(public_url="local"))
    try:
        assert service.intake is not None
        url = service.intake.receiver_url
        assert url is not None
        answer = requests.post(url + "/hooks/unknown", data=b"{}", timeout=5)
        assert answer.status_code == 404  # the receiver answers: listening, nothing mapped
        assert sandbox.state.request_log() == []
        assert _subscriptions(sandbox) == []
        service.start()
        assert len(_subscriptions(sandbox)) == 1
    finally:
        service.close()
    assert len(_subscriptions(sandbox)) == 1  # a stop is not a goodbye


def test_the_receiver_serves_on_the_socket_bound_early_and_unsubscribes_when_asked(
    sandbox: SandboxHandle, parts: tuple[StateStore, Client, str], recipe: ValidRecipe
) -> None:
    store, client, practice = parts
    early = bind_listen("127.0.0.1", 0)
    port = int(early.getsockname()[1])
    options = ServeOptions(
        public_url="local", listen=("127.0.0.1", port), listen_socket=early, unsubscribe=True
    )
    service = serve([recipe], store, client, practice, options)
    try:
        assert service.intake is not None
        assert service.intake.receiver_url == f"http://127.0.0.1:{port}"
        service.start()
        assert len(_subscriptions(sandbox)) == 1
    finally:
        service.close()
    assert _subscriptions(sandbox) == []


def test_starting_lists_the_downtime_of_a_trigger_no_poll_can_catch_up(
    parts: tuple[StateStore, Client, str], recipe: ValidRecipe
) -> None:
    store, client, practice = parts
    mark_alive(store, practice)  # an earlier serve's last sign of life
    service = serve([recipe], store, client, practice, ServeOptions(public_url="local"))
    try:
        service.start()
        gaps = store.list_attention(practice=practice, kind="gap")
    finally:
        service.close()
    assert [entry.trigger for entry in gaps] == ["any_webhook_event"]
    options = ServeOptions(public_url="local", watch_gaps=False)
    quiet = serve([recipe], store, client, practice, options)
    quiet.close()
    assert quiet.parts == []
