"""A recipe's ``retry`` policy (issue 35): a run that failed on a transient cause is tried
again after its backoff by whatever drives runs (``run --once``'s and ``serve``'s
:class:`~practiceflow.service.loop.Service`), resuming through its journal; one the policy
gives up on is listed as needing attention; a permanent failure and a write whose outcome
is unknown are never retried by it.

The sandbox's own records count the bills; its fault injection answers 429 to the read.
The store's clock is the test's, so that a backoff passes without waiting for it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from practiceflow.api import Client, RateLimits, RetryPolicy
from practiceflow.cli.attention import attention
from practiceflow.cli.runs import runs
from practiceflow.console.data import ConsoleContext, attention_view
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import Runner, validate_recipe
from practiceflow.runner.run_retry import EXHAUSTED, policy_of, transient_cause
from practiceflow.service.loop import Service
from practiceflow.state import StateStore, open_store
from practiceflow.testing import SandboxHandle
from runner._support import write_recipe

pytestmark = pytest.mark.integration

PRACTICE = "retry-practice"

#: Bill first (a write), then read the client (the read the faults answer 429).
STEPS = """\
  - id: bill
    use: create_bill
    with:
      entityKey: "{{ trigger.entityKey }}"
      billDetails: "retry test {{ trigger.ref }}"
      lineItems:
        - {amount: 100, taxPercent: 10, narration: Onboarding fee}
  - id: client
    use: get_client
    with: {entityKey: "{{ trigger.entityKey }}"}
"""


class Clock:
    """The store's time, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)  # the sandbox dates its records by its own clock

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed_store(tmp_path: Path, clock: Clock) -> Iterator[StateStore]:
    with open_store(str(tmp_path / "state.db"), clock=clock) as opened:
        yield opened


@pytest.fixture
def impatient(fast_sandbox: SandboxHandle) -> Iterator[Client]:
    """A client that gives up a call after its third 429 (no long pauses)."""
    client_id, secret = fast_sandbox.credentials("anz", "rw")
    limits = RateLimits(
        per_minute=100_000, per_hour=1_000_000, per_day=10_000_000, retry_after_floor=0.01
    )
    retry = RetryPolicy(max_attempts=2, max_rate_limited=2, backoff_base=0.01)
    with Client(
        client_id, secret, base_url=fast_sandbox.base_url("anz"), limits=limits, retry=retry
    ) as made:
        yield made


def _entity(sandbox: SandboxHandle) -> dict[str, Any]:
    rows = sandbox.admin("GET", "/_admin/records/entities")
    return next(row for row in rows if row["status"] == "Active" and row.get("entityType"))


def _bills(sandbox: SandboxHandle, ref: str) -> int:
    rows = sandbox.admin("GET", "/_admin/records/bills")
    return sum(f"retry test {ref}" in (row.get("billDetails") or "") for row in rows)


def _arm_429(sandbox: SandboxHandle, count: int, path: str = "/api/v1/entities") -> None:
    body = {"kind": "rate_limit", "count": count, "method": "GET", "pathPrefix": path}
    sandbox.admin("POST", "/_admin/faults", {**body, "retryAfter": 0})


@dataclass
class Rig:
    """A sandbox, a state store on a clock the test moves, and an impatient client."""

    sandbox: SandboxHandle
    tmp_path: Path
    registry: ModuleRegistry
    store: StateStore
    client: Client
    clock: Clock

    @property
    def state(self) -> str:
        """The state store's path, for the CLI's ``--state``."""
        return str(self.tmp_path / "state.db")

    def service(self, extra: str = "", on_point: Any = None) -> Service:
        """A service running the billing recipe (``extra``: its more keys)."""
        recipe = validate_recipe(
            write_recipe(self.tmp_path, STEPS, name="billing", extra=extra), registry=self.registry
        )
        runner = Runner(recipe, self.store, self.client, practice=PRACTICE, on_point=on_point)
        return Service(runners=[runner], store=self.store)

    def record(self, ref: str) -> None:
        """Record the event of a run billing an active client of the sandbox."""
        entity = _entity(self.sandbox)
        payload = {"ref": ref, "entityKey": entity["entityKey"]}
        self.store.record_event(PRACTICE, "test_event", "e", ref, payload)


@pytest.fixture
def rig(
    fast_sandbox: SandboxHandle,
    tmp_path: Path,
    registry: ModuleRegistry,
    timed_store: StateStore,
    impatient: Client,
    clock: Clock,
) -> Rig:
    return Rig(fast_sandbox, tmp_path, registry, timed_store, impatient, clock)


def _after_the_bill(sandbox: SandboxHandle, count: int) -> Any:
    """Arm ``count`` 429s on the client read once the bill is journaled (the bill's own
    checks read entities too)."""

    def point(label: str) -> None:
        if label == "done:bill":
            _arm_429(sandbox, count)

    return point


def test_a_run_whose_read_met_429s_is_retried_after_its_backoff_and_bills_once(
    rig: Rig,
) -> None:
    # The client's patience is two 429s: the third fails the call.
    armed = _after_the_bill(rig.sandbox, 3)
    service = rig.service("retry: {backoff: 30}\n", armed)
    rig.record("r1")

    service.run_once()

    (run,) = rig.store.list_runs()
    assert run.status == "failed"
    scheduled = rig.store.run_retry(run.run_id)
    assert scheduled is not None
    assert scheduled.attempts == 1
    assert scheduled.next_at == rig.clock.now + timedelta(seconds=30)
    assert scheduled.cause == {"step": "client", "type": "RateLimitError", "status": 429}
    assert _bills(rig.sandbox, "r1") == 1

    service.run_once()  # not due yet: nothing is sent
    assert rig.store.get_run(run.run_id).status == "failed"  # type: ignore[union-attr]

    rig.clock.now += timedelta(seconds=31)
    service.run_once()

    after = rig.store.get_run(run.run_id)
    assert after is not None
    assert after.status == "succeeded"
    assert _bills(rig.sandbox, "r1") == 1  # the journal kept the bill: not sent again
    bill_posts = [
        row
        for row in rig.sandbox.admin("GET", "/_admin/requests")
        if row["method"] == "POST" and row["path"].endswith("/bills")
    ]
    assert len(bill_posts) == 1
    done = rig.store.run_retry(run.run_id)
    assert done is not None
    assert (done.attempts, done.next_at) == (1, None)
    assert rig.store.list_attention() == []

    shown = CliRunner().invoke(runs, ["show", run.run_id, "--state", rig.state])
    assert shown.exit_code == 0, shown.output
    assert "retried: 1 attempt(s) failed on a transient cause" in shown.output


def test_a_run_the_policy_gives_up_on_is_one_attention_entry_settled_like_the_others(
    rig: Rig,
) -> None:
    armed = _after_the_bill(rig.sandbox, 100)
    policy = "retry: {attempts: 2, backoff: 10}\n"
    service = rig.service(policy, armed)
    rig.record("r2")

    service.run_once()
    (run,) = rig.store.list_runs()
    state = rig.state
    shown = CliRunner().invoke(runs, ["show", run.run_id, "--state", state, "--json"])
    assert json.loads(shown.output)["retry"] == {
        "attempts": 1,
        "next_at": (rig.clock.now + timedelta(seconds=10)).isoformat(),
        "cause": {"step": "client", "type": "RateLimitError", "status": 429},
    }
    for _ in range(3):  # the second attempt fails too; then nothing is due any more
        rig.clock.now += timedelta(seconds=60)
        service.run_once()

    assert rig.store.get_run(run.run_id).status == "failed"  # type: ignore[union-attr]
    (entry,) = rig.store.list_attention()
    assert (entry.kind, entry.status, entry.trigger) == (EXHAUSTED, "open", "billing")
    assert entry.evidence == {
        "run": run.run_id,
        "attempts": 2,
        "cause": {"step": "client", "type": "RateLimitError", "status": 429},
    }
    assert f"practiceflow runs retry {run.run_id}" in entry.reason
    assert _bills(rig.sandbox, "r2") == 1
    retried = rig.store.run_retry(run.run_id)
    assert retried is not None
    assert (retried.attempts, retried.next_at) == (2, None)

    listed = CliRunner().invoke(runs, ["list", "--status", "in_doubt", "--json", "--state", state])
    assert [row.get("kind") for row in json.loads(listed.output)] == [EXHAUSTED]
    (shown_row,) = attention_view(ConsoleContext(store=rig.store, practice=PRACTICE))
    assert (shown_row["kind"], shown_row["recipe"]) == (EXHAUSTED, "retries exhausted: billing")
    assert shown_row["settle"].startswith("practiceflow attention settle ")
    settled = CliRunner().invoke(
        attention, ["settle", entry.attention_id[:8], "--note", "retried by hand", "--state", state]
    )
    assert settled.exit_code == 0, settled.output
    assert [e.status for e in rig.store.list_attention()] == ["closed"]


def test_a_permanent_failure_is_not_retried(
    rig: Rig,
) -> None:
    service = rig.service()
    missing = str(uuid.uuid4())
    payload = {"ref": "r3", "entityKey": missing}  # no such client
    rig.store.record_event(PRACTICE, "test_event", "e", "r3", payload)

    service.run_once()
    rig.clock.now += timedelta(days=1)
    service.run_once()

    (run,) = rig.store.list_runs()
    assert run.status == "failed"
    assert run.error["type"] == "InputError"  # the bill's check: no such client
    assert rig.store.run_retry(run.run_id) is None
    assert rig.store.list_attention() == []
    gets = [r for r in rig.sandbox.admin("GET", "/_admin/requests") if r["method"] == "GET"]
    assert len([r for r in gets if missing in r["path"]]) == 1  # tried once, not again


def test_a_write_refused_by_429s_at_its_ledger_check_is_retried_and_bills_once(
    rig: Rig,
) -> None:
    # The case: the bill's ledger check met 429s until the client gave up; nothing
    # was sent, so the run is retried, and the bill is made once.
    service = rig.service()
    rig.record("r5")
    _arm_429(rig.sandbox, 3, "/api/v1/bills/ledger/status")

    service.run_once()
    (run,) = rig.store.list_runs()
    assert (run.status, run.error["step"], run.error["status"]) == ("failed", "bill", 429)
    assert _bills(rig.sandbox, "r5") == 0

    rig.clock.now += timedelta(seconds=61)  # the default backoff
    service.run_once()

    assert rig.store.get_run(run.run_id).status == "succeeded"  # type: ignore[union-attr]
    assert _bills(rig.sandbox, "r5") == 1


def test_a_write_whose_answer_was_lost_is_not_retried_by_the_policy(
    rig: Rig,
) -> None:
    service = rig.service("marker: false\n")
    rig.record("r4")
    body = {"kind": "drop", "count": 1, "method": "POST", "pathPrefix": "/api/v1/bills"}
    rig.sandbox.admin("POST", "/_admin/faults", body)

    service.run_once()
    rig.clock.now += timedelta(days=1)
    service.run_once()

    (run,) = rig.store.list_runs()
    # The write happened; its answer was lost: read back (found) or held, never sent again.
    assert run.status in ("succeeded", "in_doubt")
    assert rig.store.run_retry(run.run_id) is None
    assert _bills(rig.sandbox, "r4") == 1


READ = {"client": False, "bill": True}


@pytest.mark.parametrize(
    ("step", "error", "transient"),
    [
        ("client", {"type": "RateLimitError", "status": 429}, True),
        ("client", {"type": "ServerError", "status": 503}, True),
        ("client", {"type": "TransportError"}, True),
        ("bill", {"type": "RateLimitError", "status": 429}, True),  # refused: not done
        ("bill", {"type": "TransportError"}, True),  # the client raises it only when refused
        ("bill", {"type": "ServerError", "status": 500}, False),  # in doubt, never a guess
        ("bill", {"type": "InDoubtError"}, False),
        ("client", {"type": "NotFoundError", "status": 404}, False),
        ("bill", {"type": "ValidationError", "status": 422}, False),
        ("client", {"type": "TemplateError"}, False),
        ("client", {"reason": "quarantined"}, False),
        ("nosuch", {"type": "RateLimitError"}, False),
    ],
)
def test_which_failures_are_transient(
    tmp_path: Path, registry: ModuleRegistry, step: str, error: dict[str, Any], transient: bool
) -> None:
    recipe = validate_recipe(write_recipe(tmp_path, STEPS, name="t"), registry=registry)
    cause = transient_cause(recipe, {"step": step, "message": "m", **error})
    assert (cause is not None) == transient
    if cause is not None:
        assert "message" not in cause  # a message may quote the data


@pytest.mark.parametrize(
    ("declared", "attempts", "backoff"),
    [("", 3, 60.0), ("retry: {attempts: 1}\n", 1, 60.0), ("retry: {backoff: 5}\n", 3, 5.0)],
)
def test_the_policy_declared_or_the_default(
    tmp_path: Path, registry: ModuleRegistry, declared: str, attempts: int, backoff: float
) -> None:
    recipe = validate_recipe(write_recipe(tmp_path, STEPS, extra=declared), registry=registry)
    policy = policy_of(recipe)
    assert (policy.attempts, policy.backoff) == (attempts, backoff)
    assert policy.delay(2) == timedelta(seconds=backoff * 2)
