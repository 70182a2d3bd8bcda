"""Cassettes (practiceflow.testing): recorded against the sandbox over real HTTP, saved and
loaded, replayed with no server, refused with a diff when a request differs, and scrubbed
of personal values the same way every time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from practiceflow.api import Client, RateLimits
from practiceflow.engine import run_action
from practiceflow.errors import ConfigError
from practiceflow.manifest import default_registry
from practiceflow.testing import (
    REPLAY_BASE_URL,
    Cassette,
    CassetteMismatch,
    CassettePlayer,
    CassetteRecorder,
    Exchange,
    RecordedRequest,
    RecordedResponse,
    SandboxHandle,
    load_cassette,
    make_cassette,
    save_cassette,
    scrub,
)

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"
FAST = RateLimits(per_minute=100_000, per_hour=1_000_000, per_day=10_000_000)


def _page(number: int, rows: list[Any], more: bool) -> Exchange:
    return Exchange(
        RecordedRequest("GET", "/api/v1/users/list", {"pageNumber": str(number)}),
        RecordedResponse(
            200, {"Content-Type": "application/json"}, {"items": rows, "hasMore": more}
        ),
    )


LIST = Cassette(
    "list_users",
    "action",
    "default",
    {"limit": 3},
    (_page(1, [{"userKey": "a"}, {"userKey": "b"}], True), _page(2, [{"userKey": "c"}], False)),
    "list.yaml",
)


def _replayed(player: CassettePlayer) -> Client:
    return Client("id", "secret", base_url=REPLAY_BASE_URL, session=player.session(), limits=FAST)


@pytest.mark.integration
def test_a_recording_of_the_sandbox_replays_without_it(
    sandbox: SandboxHandle, tmp_path: Path
) -> None:
    client_id, secret = sandbox.credentials("anz", "rw")
    base = sandbox.base_url("anz")
    recorder = CassetteRecorder(base)
    with Client(client_id, secret, base_url=base, session=recorder.session(), limits=FAST) as api:
        live = run_action("find_clients", {"limit": 120}, api).output
    pages = [exchange.request.query for exchange in recorder.exchanges]
    assert pages == [{"pageNumber": "1"}, {"pageNumber": "2"}]
    recorded = Cassette(
        "find_clients", "action", "default", {"limit": 120}, tuple(recorder.exchanges)
    )
    path = save_cassette(recorded, tmp_path / "find_clients.yaml")
    text = path.read_text(encoding="utf-8")
    assert secret not in text
    assert client_id not in text

    player = CassettePlayer(load_cassette(path))
    first = live["items"][0]["entityKey"]
    sandbox.admin("PATCH", f"/_admin/entities/{first}", {"entityName": "Changed live"})
    with _replayed(player) as api:
        replayed = run_action("find_clients", {"limit": 120}, api).output
    player.check()
    assert replayed == live
    assert replayed["count"] == 120


def test_a_request_that_differs_is_refused_with_the_fields_that_differ() -> None:
    player = CassettePlayer(LIST)
    with _replayed(player) as api, pytest.raises(CassetteMismatch) as caught:
        api.get("/api/v1/users/list", {"pageNumber": 3})
    message = str(caught.value)
    assert "list.yaml: GET /api/v1/users/list?pageNumber=3 matches no exchange left" in message
    assert "request.query.pageNumber: sent '3', recorded '1'" in message
    assert player.mismatches == [message]  # kept even when a runtime swallows the error


def test_an_exchange_never_sent_fails_the_check() -> None:
    player = CassettePlayer(LIST)
    with _replayed(player) as api:
        assert api.get("/api/v1/users/list", {"pageNumber": 1})["hasMore"] is True
    with pytest.raises(CassetteMismatch, match=r"pageNumber=2 was never sent"):
        player.check()


def test_a_request_sent_once_more_than_recorded_is_refused() -> None:
    player = CassettePlayer(LIST)
    with _replayed(player) as api:
        api.get("/api/v1/users/list", {"pageNumber": 1})
        with pytest.raises(CassetteMismatch, match="matches no exchange left"):
            api.get("/api/v1/users/list", {"pageNumber": 1})


def test_normalize_takes_a_declared_difference_out_of_both_sides() -> None:
    def no_page(request: RecordedRequest) -> RecordedRequest:
        return RecordedRequest(request.method, request.path, {}, request.body, request.headers)

    player = CassettePlayer(LIST, normalize=no_page)
    with _replayed(player) as api:
        assert api.get("/api/v1/users/list")["items"][0] == {"userKey": "a"}
    assert [request.query for request in player.raw_sent] == [{}]


def test_a_literal_the_recording_scrubbed_from_a_personal_field_still_matches() -> None:
    # A recipe writes a literal into a personal field (a contact's firstName): the recording
    # scrubbed it to its stand-in, and the replay sends the literal again.
    def contact(first_name: str) -> RecordedRequest:
        body = {"firstName": first_name, "isPrimary": True}
        return RecordedRequest("POST", "/api/v1/entities/e1/contacts", {}, body)

    answer = RecordedResponse(201, {"Content-Type": "application/json"}, {"contactKey": "c1"})
    exchanges = [Exchange(contact("Refused"), answer)]
    recorded = make_cassette(
        "c", "action", "default", {}, exchanges, names=frozenset({"firstName"})
    )
    assert recorded.exchanges[0].request.body["firstName"] != "Refused"
    player = CassettePlayer(recorded)
    with _replayed(player) as api:
        with pytest.raises(CassetteMismatch, match="firstName: sent 'Other'"):
            api.post("/api/v1/entities/e1/contacts", {"firstName": "Other", "isPrimary": True})
        sent = {"firstName": "Refused", "isPrimary": True}
        assert api.post("/api/v1/entities/e1/contacts", sent) == {"contactKey": "c1"}
    assert player.unplayed == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("version: 2\nmodule: x\nkind: action\nexchanges: []\n", "version: got 2; expected 1"),
        (
            "version: 1\nmodule: x\nkind: flow\nexchanges: []\n",
            "kind: got 'flow'; valid values are action, trigger, recipe",
        ),
        (
            "version: 1\nmodule: x\nkind: action\nexchanges: [{request: {}}]\n",
            "exchanges[0].request",
        ),
        ("version: 1\nmodule: x\nkind: action\n", "exchanges: expected a list"),
        ("- not a mapping\n", "(top)"),
    ],
)
def test_a_bad_cassette_names_the_file_and_the_field(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_cassette(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert where in str(caught.value)


def test_scrubbing_is_the_same_every_time_and_keeps_the_shape() -> None:
    tree = {
        "email": "jane.citizen@example.com",
        "note": "Call jane.citizen@example.com",
        "key": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58",
        "phone": "0400 123 456",
    }
    values = {"jane.citizen@example.com", "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "0400 123 456"}
    once, twice = scrub(tree, values), scrub(tree, set(values))
    assert once == twice
    assert once["email"] != tree["email"]
    assert once["note"] == "Call " + once["email"]
    assert once["key"] == tree["key"]  # keys are structure, not persons
    assert once["email"].count("@") == 1
    assert once["phone"][4] == " "
    assert once["phone"].replace(" ", "").isdigit()


def test_a_personal_input_value_is_scrubbed_alike_in_input_request_and_answer() -> None:
    module = default_registry().action("create_contact")
    person = {"firstName": "Zelda", "lastName": "Quartermaine", "email": "zq@example.org"}
    data = {"entityKey": "0b6a3c1e-5f0d-4c8e-9a2b-7d4e1f3a6c58", "contact": person}
    exchange = Exchange(
        RecordedRequest("POST", "/api/v1/entities/x/contacts", {}, person),
        RecordedResponse(201, {}, {**person, "contactKey": "k-1"}),
    )
    cassette = make_cassette(
        "create_contact",
        "action",
        "default",
        data,
        [exchange],
        input_pii=module.pii_paths,
        output_schema=module.output.schema,
    )
    text = str(cassette.as_dict())
    assert "Quartermaine" not in text
    assert "zq@example.org" not in text
    (replayed,) = cassette.exchanges
    assert replayed.request.body == cassette.input["contact"]
    assert replayed.response.body["lastName"] == cassette.input["contact"]["lastName"]


def test_another_letter_case_of_a_personal_value_is_scrubbed_too() -> None:
    exchange = Exchange(
        RecordedRequest("GET", "/api/v1/x", {}),
        RecordedResponse(200, {}, {"email": "Zelda.Q@example.org"}),
    )
    cassette = make_cassette(
        "x",
        "action",
        "default",
        {"who": "zelda.q@example.org"},
        [exchange],
        input_pii=frozenset({("who",)}),
    )
    answer = cassette.exchanges[0].response.body["email"]
    assert answer.lower() == cassette.input["who"]
    assert answer[0].isupper()


def test_no_committed_cassette_holds_a_credential_or_a_client_header() -> None:
    texts = [path.read_text(encoding="utf-8") for path in sorted(CASSETTES.glob("*/*.yaml"))]
    assert texts
    for text in texts:
        assert "X-SVC-Auth" not in text
        assert "Authorization" not in text
        assert "User-Agent" not in text


def test_the_replayed_client_never_opens_a_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a replay opened a connection")

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", refuse)
    player = CassettePlayer(LIST)
    with _replayed(player) as api:
        assert len(list(api.paginate("/api/v1/users/list"))) == 3
    player.check()


@pytest.mark.integration
def test_the_guide_example_records_and_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "modules-guide.md").read_text(
        encoding="utf-8"
    )
    code = guide.split("<!-- cassette example -->\n```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/modules-guide.md", "exec"), {})  # noqa: S102 - the doc's own example
    assert load_cassette(tmp_path / "lead_sources.yaml").exchanges
