"""How ``serve`` (and ``run`` without ``--once``) starts, in the order that loses nothing.

1. Take the state file's lease (:mod:`practiceflow.service.lease`): a second ``serve`` on
   the same SQLite file refuses here, before anything is sent.
2. Check the recipes locally, open the store, and **start the receiver** with every webhook
   trigger bound, before the first request: the sender's retries of what it delivered while
   we were down are stored from the first moment (``PRACTICEFLOW_LISTEN``).
3. Note the downtime since the store's last sign of life as a gap
   (:mod:`practiceflow.service.gaps`), start the heartbeat, and sweep in the background the
   gaps a list can prove complete (:mod:`practiceflow.service.sweep`).
4. Check the credentials, subscribe what is not subscribed yet (subscriptions are kept on a
   normal stop), catch up every trigger with a poll source, then run the loop.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from practiceflow.cli.common import ApiOptions
from practiceflow.cli.intake_options import IntakeOptions, announce, build_cli_intake
from practiceflow.cli.retention import purge_by_setting
from practiceflow.cli.serve_report import ServeReport
from practiceflow.cli.state import open_state, practice_client, practice_key, sqlite_file
from practiceflow.errors import ConfigError
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.service.early_listen import release
from practiceflow.service.gaps import Heartbeat, last_alive, note_downtime
from practiceflow.service.intake import LISTEN_ENV
from practiceflow.service.lease import ServeLease
from practiceflow.service.loop import Service
from practiceflow.service.silence import SilenceWatch, healer, silence_settings
from practiceflow.service.sweep import GapSweep
from practiceflow.state.request_log import RequestLog

__all__ = ["serve_recipes"]


def serve_recipes(
    paths: Sequence[str],
    practice: str | None,
    state: str | None,
    modules_dirs: Sequence[str],
    api: ApiOptions,
    options: IntakeOptions,
    *,
    console: str | None = None,
    console_token: str | None = None,
    unsubscribe: bool = False,
) -> None:
    """Serve recipes until SIGTERM (see the module docstring for the start-up order).

    Args:
        paths: the recipe files.
        practice: ``--practice``, or None for the default key.
        state: ``--state``, or None for the default store.
        modules_dirs: folders of the user's own modules.
        api: the API options.
        options: ``--public-url``, ``--listen``, ``--since``.
        console: where the console listens (``HOST:PORT``), or None for no console.
        console_token: the console's token.
        unsubscribe: remove the subscriptions on a clean stop (``--unsubscribe-on-exit``).

    Raises:
        ConfigError: bad input, or another serve holds the state file (``StoreInUse``).
    """
    from practiceflow.console.server import check_bind, console_for, parse_listen
    from practiceflow.ops import OpsMetrics, counted_session, ops_routes, serve_practices

    listen = parse_listen(console) if console else None
    if listen is not None:
        check_bind(listen[0], console_token)  # refuse before any request is sent
    stop = threading.Event()  # SIGTERM during start-up stops cleanly too
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with ExitStack() as stack:
        lease = _lease(state, listen, options.listen or os.environ.get(LISTEN_ENV))
        if lease is not None:
            stack.callback(lease.release)
        registry = load_modules(list(modules_dirs))
        checked = [validate_recipe(path, registry=registry) for path in paths]
        metrics = OpsMetrics()  # /healthz, /readyz, /metrics beside the console
        names: list[str] = []
        session = stack.enter_context(counted_session(metrics.counter(lambda: names[0])))
        # The practice's budget, shared with run and mcp on this store (cli.state).
        client = stack.enter_context(practice_client(api, state, session=session))
        key = practice_key(practice, client.settings.client_id)
        names.append(key)
        store = stack.enter_context(open_state(state))
        purge_by_setting(store)  # PRACTICEFLOW_RETENTION, once at start
        intake = build_cli_intake(checked, store, client, key, options, unsubscribe=unsubscribe)
        metrics.watch(store, serve_practices(key, client.budget, intake))

        def poll_started(due: float) -> None:
            metrics.poll_started(key, due)

        intake.poll_started = poll_started
        stack.callback(intake.stop)
        intake.start_receiving()  # deliveries are stored from here on
        release()  # an early socket no webhook trigger took
        if lease is not None:
            lease.update(receiver=intake.receiver_url)
        can_write = client.validate().can_write
        recipes = [validate_recipe(path, registry=registry, can_write=can_write) for path in paths]
        report = ServeReport(store, key, last_alive(store, key), unsubscribe=unsubscribe)
        coverage = intake.coverage()
        note_downtime(store, key, coverage, now=report.back)  # before the first heartbeat
        stack.callback(Heartbeat(store, key).start().stop)
        intake.on_started = report.started(announce)
        counted = stack.enter_context(RequestLog(store, key))
        client.budget.on_admit(counted.admitted)  # the console's budget chart
        runners = [Runner(recipe, store, client, practice=key) for recipe in recipes]
        wake = threading.Event()
        intake.on_stored = wake.set  # the receiver and pollers wake the runner
        service = Service(runners, store, intake, stop=stop, wake=wake)
        service.on_outcome = report.outcome
        unpolled = {name: found for name, found, polled in coverage if not polled}
        sweep = GapSweep(store, key, client, unpolled, on_stored=wake.set, on_done=report.swept)
        every, grace = silence_settings()
        silence = SilenceWatch(
            store, key, client, unpolled, healer(intake.triggers), every=every, grace=grace,
            since=report.back, on_stored=wake.set,
        )  # fmt: skip
        stack.callback(report.stopped)  # last: after the sweeps and the intake stopped
        stack.callback(sweep.join, 30.0)
        stack.callback(silence.join, 30.0)
        sweep.start()
        silence.start()
        triggers = {recipe.trigger.key for recipe in recipes}

        def reload() -> list[Runner]:
            """The recipe files as they are now (SIGHUP): same triggers, new versions."""
            fresh = load_modules(list(modules_dirs))
            now = [validate_recipe(path, registry=fresh, can_write=can_write) for path in paths]
            if {recipe.trigger.key for recipe in now} != triggers:
                message = "the recipes' triggers changed; restart serve to subscribe them"
                raise ConfigError(message)
            return [Runner(recipe, store, client, practice=key) for recipe in now]

        service.reload = reload
        if listen is not None:
            service.console = console_for(
                service, client, recipes, key, listen, console_token, ops_routes(metrics)
            )
        service.install_signal_handlers()
        service.run()


def _lease(state: str | None, listen: Any, receiver: str | None) -> ServeLease | None:
    """Take the SQLite state file's serve lease (PostgreSQL: none; see runner.lease)."""
    path = sqlite_file(state)
    if path is None:
        return None
    console = f"http://{listen[0]}:{listen[1]}/console/" if listen is not None else None
    return ServeLease(path).acquire(console=console, receiver=receiver)
