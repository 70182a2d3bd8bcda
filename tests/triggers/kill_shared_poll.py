"""Poll the four entity triggers together once, and SIGKILL this process at a store write
(injected from outside the product)::

    python tests/triggers/kill_shared_poll.py STATE.db BASE_URL cursor:lead_converted#2

The point names a write (``event:NAME`` or ``cursor:NAME``, ``#N`` for its N-th time);
the credentials come from ``PRACTICEFLOW_CLIENT_ID`` / ``PRACTICEFLOW_CLIENT_SECRET``.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from practiceflow.api import Client
from practiceflow.state import SQLiteStore
from practiceflow.triggers import PollMember, SharedPoll, load_definition

ENTITY_TRIGGERS = ("new_client", "new_lead", "lead_converted", "updated_client")


def main(path: str, base_url: str, point: str) -> None:
    what, _, rest = point.partition(":")
    name, _, nth = rest.partition("#")
    left = [int(nth or "1")]

    class Killing(SQLiteStore):
        def _reached(self, kind: str, trigger: str) -> None:
            if (kind, trigger) == (what, name):
                left[0] -= 1
                if not left[0]:
                    os.kill(os.getpid(), signal.SIGKILL)

        def record_event(self, practice: str, source: str, *args: Any, **kwargs: Any) -> bool:
            self._reached("event", source)
            return super().record_event(practice, source, *args, **kwargs)

        def set_cursor(self, practice: str, trigger_key: str, *args: Any, **kwargs: Any) -> None:
            self._reached("cursor", trigger_key)
            super().set_cursor(practice, trigger_key, *args, **kwargs)

    store = Killing(path)
    client = Client(
        os.environ["PRACTICEFLOW_CLIENT_ID"],
        os.environ["PRACTICEFLOW_CLIENT_SECRET"],
        base_url=base_url,
        environ={},
    )
    members = [PollMember(store, "p", load_definition(key)) for key in ENTITY_TRIGGERS]
    SharedPoll(client, members).poll_once()
    store.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
