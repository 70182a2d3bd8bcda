"""One webhook event crosses few files on its way to its first journaled write.

``bench/event_path.py`` traces the event in-process, from the receiver being handed the
signed delivery to the journal's outcome of the first write, with the service built by
:func:`practiceflow.service.serve`; the count of files that call into another file is
deterministic (it counts code, not time), so it is asserted here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.integration

BENCH = Path(__file__).resolve().parents[2] / "bench" / "event_path.py"
#: Issue 33's target: the receiver, the loop, the runner (execute, step executor,
#: journal), the engine and the action's check (hooks), the client, the store (its SQL,
#: its runs' SQL, the group commit), templating and the trigger's mapping. A layer added
#: on the path fails it.
CEILING = 15


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("event_path", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_one_webhook_event_reaches_its_first_journaled_write_through_few_files() -> None:
    path = _bench().trace_event_path()
    files = path.files
    # The path really was traced: receiver, loop, runner, client and journal are on it.
    for where in ("triggers/webhook_receiver.py", "service/loop.py", "runner/execute.py",
                  "runner/step_executor.py", "api/client.py", "runner/journal.py"):  # fmt: skip
        assert where in files, files
    assert len(files) <= CEILING, files
