"""Record the cassettes of every shipped action and trigger on the sandbox (``make cassettes``).

For each sandbox preset (``default``, ``hostile``) a sandbox is started on 127.0.0.1; before
each module it is reset to its seed, and the module is run once through the engine with a
client whose session records every exchange (:class:`practiceflow.testing.CassetteRecorder`).
The cassette goes to ``tests/cassettes/<preset>/<module>.yaml``, personal values scrubbed.

Inputs are generic, taken from each module's input schema:

* the first ``examples`` entry of each required field (and of the first ``anyOf``
  alternative's required fields);
* a field naming a record of the practice (``entityKey``, ``billingID``, ``proposalKey`` ...),
  required or not, gets a real one of the sandbox (:data:`REFERENCES`); one with
  ``x-choices`` gets the first choice its list action offers;
* a paged list gets ``limit: 120``, past the first page of every list the sandbox pages;
* :data:`OVERRIDES` replaces the few examples a sandbox cannot serve.

Triggers are polled once from :data:`SINCE` on a fresh SQLite store (webhook-only triggers
have no poll: their cassette holds no exchange).

Run: ``.venv/bin/python tests/conformance/record.py [--preset default] [module ...]``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import tempfile
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import Any, Final

from practiceflow.api import Client, RateLimits
from practiceflow.engine import run_action
from practiceflow.errors import PracticeflowError
from practiceflow.manifest import ActionModule, TriggerModule, default_registry
from practiceflow.sandbox.variants import PRESETS, Variants
from practiceflow.state import open_store
from practiceflow.testing import (
    REPLAY_BASE_URL,
    Cassette,
    CassettePlayer,
    CassetteRecorder,
    SandboxHandle,
    make_cassette,
    personal_names,
    running_sandbox,
    save_cassette,
)
from practiceflow.triggers import Poller
from practiceflow.triggers.definition import definition

HERE: Final = Path(__file__).resolve().parent
CASSETTES: Final = HERE.parent / "cassettes"
#: The poll start of a recorded trigger, and the "today" of its date windows.
SINCE: Final = "2024-01-01T00:00:00Z"
TODAY: Final = date(2025, 6, 30)
#: The limit given to paged lists: past the first page of every list the sandbox pages.
PAGED_LIMIT: Final = 120
#: Where an example cannot serve against a sandbox: a range too narrow to reach a second
#: page; a webhook URL the sandbox refuses (it delivers to loopback only).
OVERRIDES: Final[Mapping[str, Mapping[str, Any]]] = {
    "find_bills": {"startDate": "2020-01-01", "endDate": "2026-12-31"},
    "subscribe_webhook": {"hookUrl": "http://127.0.0.1:9/practiceflow"},
}
FAST: Final = RateLimits(per_minute=100_000, per_hour=1_000_000, per_day=10_000_000)


@functools.cache
def _names() -> frozenset[str]:
    registry = default_registry()
    schemas: list[Mapping[str, Any]] = []
    for action in registry.actions.values():
        schemas += [action.input_schema, action.output.schema]
    schemas += [trigger.output_schema for trigger in registry.triggers.values()]
    return personal_names(schemas)


def _practice(sandbox: SandboxHandle) -> Any:
    return sandbox.state.practice("anz")


def _entity(sandbox: SandboxHandle, module: str) -> str:
    if "proposal" in module:  # a client with proposals
        return str(_records(sandbox, "proposals")[0]["entityKey"])
    want = "Lead" if "lead" in module else "Active"
    practice = _practice(sandbox)
    return next(entity.key for entity in practice.order if entity.status == want)


def _records(sandbox: SandboxHandle, kind: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = sandbox.admin("GET", f"/_admin/records/{kind}")
    return rows


def _onboarding(sandbox: SandboxHandle) -> dict[str, Any]:
    """The first onboarding job, completed (its documents uploaded) so that they can be read."""
    first = _records(sandbox, "onboardings")[0]
    if first["status"] != "Completed":
        sandbox.admin("POST", f"/_admin/onboardings/{first['onboardingKey']}/complete")
    return _records(sandbox, "onboardings")[0]


def _contact(sandbox: SandboxHandle, module: str) -> str:
    """A contact of the client :func:`_entity` picks for the module."""
    owner = _entity(sandbox, module)
    rows = _records(sandbox, "contacts")
    return str(next(row["contactKey"] for row in rows if row["entityKey"] == owner))


def _subscription(sb: SandboxHandle, api: Client) -> str:
    subscribe = default_registry().action("subscribe_webhook")
    made = run_action(subscribe, module_input(subscribe, sb, api, Path()), api).output
    return str(made["id"])


#: Input field -> how to find a real value for it in the reset sandbox (module key given).
REFERENCES: Final[Mapping[str, Callable[[SandboxHandle, Client, str], Any]]] = {
    "entityKey": lambda sb, api, module: _entity(sb, module),
    "billingID": lambda sb, api, module: _records(sb, "bills")[0]["billingID"],
    "proposalKey": lambda sb, api, module: _records(sb, "proposals")[0]["proposalKey"],
    "recurringBillingId": lambda sb, api, module: _records(sb, "recurring")[0][
        "recurringBillingID"
    ],
    "onboardingKey": lambda sb, api, module: _onboarding(sb)["onboardingKey"],
    "entityOnboardingId": lambda sb, api, module: _onboarding(sb)["clients"][0][
        "entityOnboardingId"
    ],
    "documentId": lambda sb, api, module: _onboarding(sb)["clients"][0]["documents"][0][
        "documentId"
    ],
    "id": lambda sb, api, module: _subscription(sb, api),
    "contactKey": lambda sb, api, module: _contact(sb, module),
}


def _first_choice(module: ActionModule | TriggerModule, name: str, api: Client) -> Any:
    source = module.choices.get((name,))
    if source is None:
        return None
    rows = run_action(source.action, dict(source.with_), api).output.get("items") or []
    for row in rows:
        if isinstance(row, Mapping) and all(row.get(k) == v for k, v in source.where.items()):
            return row.get(source.value) if source.value else row
    return None


def module_input(
    module: ActionModule | TriggerModule, sandbox: SandboxHandle, api: Client, saves: Path
) -> Any:
    """The generic input of an action, or options of a trigger (see the module docstring)."""
    schema = module.input_schema
    properties: Mapping[str, Any] = schema.get("properties", {})
    # A trigger's options are all optional, and its poll may need them: take every example.
    names = list(schema.get("required", []) if isinstance(module, ActionModule) else properties)
    for alternative in schema.get("anyOf") or []:
        names += [n for n in alternative.get("required", []) if n not in names]
        break
    # An optional field naming a record (update_contact's contactKey) picks which one.
    names += [n for n in properties if n in REFERENCES and n not in names]
    data: dict[str, Any] = {}
    for name in names:
        examples = properties.get(name, {}).get("examples")
        if examples:
            data[name] = examples[0]
    listing = module.extensions.list if isinstance(module, ActionModule) else None
    if listing is not None and listing.paged and "limit" in properties:
        data["limit"] = PAGED_LIMIT
    data.update(OVERRIDES.get(module.key, {}))
    for name in list(data):
        chosen = _first_choice(module, name, api)
        if chosen is not None:
            data[name] = chosen
        elif name == "saveTo":
            data[name] = str(saves)
    return _referenced(data, sandbox, api, module.key)


def _referenced(value: Any, sandbox: SandboxHandle, api: Client, module: str) -> Any:
    """The value with every field of :data:`REFERENCES` (at any depth) naming a real record."""
    if isinstance(value, list):
        return [_referenced(item, sandbox, api, module) for item in value]
    if not isinstance(value, Mapping):
        return value
    return {
        name: REFERENCES[name](sandbox, api, module)
        if name in REFERENCES and not isinstance(item, Mapping | list)
        else _referenced(item, sandbox, api, module)
        for name, item in value.items()
    }


def record_action(module: ActionModule, preset: str, sandbox: SandboxHandle) -> Cassette:
    """Run one action against the reset sandbox and make its cassette."""
    client_id, secret = sandbox.credentials("anz", "rw")
    base = sandbox.base_url("anz")
    with (
        tempfile.TemporaryDirectory() as saves,
        Client(client_id, secret, base_url=base, limits=FAST) as helper,
    ):
        data = module_input(module, sandbox, helper, Path(saves))
        recorder = CassetteRecorder(base)
        with Client(
            client_id, secret, base_url=base, limits=FAST, session=recorder.session()
        ) as api:
            try:
                output: Any = run_action(module, data, api).output
            except PracticeflowError as exc:
                output = None
                print(f"  {module.key} ({preset}): {exc}", file=sys.stderr)
    if "saveTo" in data:
        data["saveTo"] = "./downloads"
    cassette = make_cassette(
        module.key,
        "action",
        preset,
        data,
        recorder.exchanges,
        output=output,
        input_pii=module.pii_paths,
        output_schema=module.output.schema,
        secret_paths=module.secret_paths,
        names=_names(),
    )
    _replays(module, cassette)
    return cassette


def _replays(module: ActionModule, cassette: Cassette) -> None:
    """The scrubbed cassette must replay through the engine as it was recorded."""
    player = CassettePlayer(cassette)
    data = dict(cassette.input)
    with tempfile.TemporaryDirectory() as saves:
        if "saveTo" in data:
            data["saveTo"] = saves
        # An error answer is recorded too; the player says what was sent.
        with (
            Client("id", "secret", base_url=REPLAY_BASE_URL, session=player.session()) as api,
            contextlib.suppress(PracticeflowError),
        ):
            run_action(module, data, api)
    player.check()


def record_trigger(key: str, preset: str, sandbox: SandboxHandle) -> Cassette:
    """Poll one trigger once from :data:`SINCE` on a fresh store and make its cassette."""
    found = definition(default_registry().trigger(key))
    client_id, secret = sandbox.credentials("anz", "rw")
    base = sandbox.base_url("anz")
    recorder = CassetteRecorder(base)
    payloads: list[Any] = []
    options: dict[str, Any] = {}
    if found.poll is not None:
        with Client(client_id, secret, base_url=base, limits=FAST) as helper:
            options = module_input(found.module, sandbox, helper, Path())
        with (
            tempfile.TemporaryDirectory() as folder,
            open_store(str(Path(folder) / "state.db")) as store,
            Client(
                client_id, secret, base_url=base, limits=FAST, session=recorder.session()
            ) as api,
        ):
            poller = Poller(api, store, "anz", found, options, since=SINCE, today=lambda: TODAY)
            poller.poll_once()
            payloads = [event.payload for event in store.pending_events("anz", 10_000)]
    return make_cassette(
        key,
        "trigger",
        preset,
        options,
        recorder.exchanges,
        output=payloads,
        output_schema={"type": "array", "items": found.module.output_schema},
        names=_names(),
    )


def main(argv: list[str] | None = None) -> int:
    """Record the chosen presets and modules (all by default)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", choices=PRESETS)
    parser.add_argument("modules", nargs="*")
    args = parser.parse_args(argv)
    registry = default_registry()
    wanted = set(args.modules)
    for preset in args.preset or list(PRESETS):
        with running_sandbox(variants=Variants.preset(preset)) as sandbox:
            sandbox.admin(
                "POST",
                "/_admin/config",
                {"rateLimits": {"perMinute": 100_000, "perHour": 1_000_000, "perDay": 10_000_000}},
            )
            for key in sorted(registry.actions):
                if not wanted or key in wanted:
                    sandbox.reset()
                    cassette = record_action(registry.actions[key], preset, sandbox)
                    save_cassette(cassette, CASSETTES / preset / f"{key}.yaml")
            for key in sorted(registry.triggers):
                if not wanted or key in wanted:
                    sandbox.reset()
                    cassette = record_trigger(key, preset, sandbox)
                    save_cassette(cassette, CASSETTES / preset / f"{key}.yaml")
        print(f"recorded {preset} into {CASSETTES / preset}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
