"""Scale-out: several replicas sharing one PostgreSQL database serve many practices.

This folder owns what a fleet adds to the single-process runner:

* :mod:`.fleet_file`: the fleet file, one entry per practice with its own credentials;
* :mod:`.queue`: the procrastinate job queue, its tasks and their locks;
* :mod:`.runtime`: :class:`Fleet`, what one replica runs for each practice, and
  :func:`accept_event` (a received event becomes a job);
* :mod:`.outage`: :class:`FleetPresence`, the fleet's one sign of life, and the listing of
  a time when no replica received webhooks (no silent gaps);
* :mod:`.webhook_intake`: :class:`FleetWebhooks`, a replica's webhook receiver (a stored
  delivery becomes a job at once) and the fleet's one subscription per (practice, trigger).

State lives in :class:`practiceflow.state.PostgresStore`; the journal, not the
queue, decides whether a step was done. Each Client ID's rate budget is shared by every
replica in PostgreSQL (:mod:`practiceflow.budget.postgres_bucket`).
"""

from __future__ import annotations

from practiceflow.budget.postgres_bucket import shared_budget
from practiceflow.fleet.fleet_file import FleetConfig, PracticeConfig, load_fleet
from practiceflow.fleet.outage import FleetPresence, list_outage
from practiceflow.fleet.queue import defer_events, install_queue_schema, make_app
from practiceflow.fleet.runtime import Fleet, PracticeRuntime, accept_event
from practiceflow.fleet.webhook_intake import FleetWebhooks

__all__ = [
    "Fleet",
    "FleetConfig",
    "FleetPresence",
    "FleetWebhooks",
    "PracticeConfig",
    "PracticeRuntime",
    "accept_event",
    "defer_events",
    "install_queue_schema",
    "list_outage",
    "load_fleet",
    "make_app",
    "shared_budget",
]
