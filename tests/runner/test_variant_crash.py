"""``kill -9`` of the runner under the variant matrix: whatever the service answers where
the spec is silent, a write is never repeated. A run the read-back cannot settle (a lead
that is listed only under ``/leads``, say) is held for a person with its reason: never a
second write. Counts come from the sandbox's own records."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from practiceflow.api import Client
from practiceflow.manifest import ModuleRegistry
from practiceflow.runner import Runner, validate_recipe
from practiceflow.state import open_store
from practiceflow.testing import SandboxHandle
from runner._support import RECIPES, cli_env
from runner.test_crash import _run, _writes

pytestmark = [pytest.mark.integration, pytest.mark.variants]


@pytest.mark.parametrize("point", ["answered:client", "sent:convert", "answered:bill"])
def test_kill_9_then_restart_never_writes_twice(
    fast_sandbox: SandboxHandle,
    client: Client,
    registry: ModuleRegistry,
    tmp_path: Path,
    point: str,
    variant: str,
):
    state = tmp_path / "state.db"
    env = cli_env(fast_sandbox)
    ref = f"vcrash-{point.replace(':', '-')}"
    with open_store(str(state)) as store:
        store.record_event(
            env["PRACTICEFLOW_CLIENT_ID"], "test_event", "test.event", ref, {"ref": ref}
        )
    killed = _run(state, env, point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    recipe = validate_recipe(RECIPES / "three_writes.yaml", registry=registry)
    with open_store(str(state)) as store:
        runner = Runner(recipe, store, client, practice=env["PRACTICEFLOW_CLIENT_ID"])
        (outcome,) = runner.process_pending()
        writes = _writes(fast_sandbox, ref)
        assert max(writes.values()) == 1, writes  # never twice
        if outcome.status == "succeeded":
            assert writes == {"client": 1, "convert": 1, "bill": 1}
        else:  # held for a person, with the reason, and nothing after the held step
            assert outcome.status == "in_doubt", outcome
            (run,) = store.list_runs()
            assert run.error
        assert not store.pending_events(env["PRACTICEFLOW_CLIENT_ID"])  # nothing lost
    if variant == "default":
        assert outcome.status == "succeeded"
