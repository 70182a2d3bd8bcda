"""How ``serve`` (and ``run`` without ``--once``) starts, in the order that loses nothing.

1. Take the SQLite state file's lease: a second ``serve`` refuses before anything is sent.
2. Check the recipes, open the store, build the service: its receiver starts with every
   webhook trigger bound before the first request, so the sender's retries of what came
   while we were down are stored from the first moment.
3. Check the credentials (a write step with read-only credentials refuses here), then run
   (:func:`practiceflow.service.serve`) until SIGTERM.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Sequence
from contextlib import ExitStack

from practiceflow.cli.common import ApiOptions
from practiceflow.cli.retention import purge_by_setting
from practiceflow.cli.serve_report import ServeReport
from practiceflow.cli.state import open_state, practice_client, practice_key
from practiceflow.errors import ConfigError
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, validate_recipe
from practiceflow.service.compose import ServeOptions, serve
from practiceflow.service.gaps import last_alive
from practiceflow.service.intake import LISTEN_ENV, PUBLIC_URL_ENV, listen_address
from practiceflow.service.lease import ServeLease
from practiceflow.service.silence import silence_settings
from practiceflow.service.state_location import sqlite_file
from practiceflow.state.request_log import RequestLog


def serve_recipes(
    paths: Sequence[str],
    practice: str | None,
    state: str | None,
    modules_dirs: Sequence[str],
    api: ApiOptions,
    *,
    public_url: str | None = None,
    listen: str | None = None,
    since: str | None = None,
    console: str | None = None,
    console_token: str | None = None,
    unsubscribe_on_exit: bool = False,
    listen_socket: socket.socket | None = None,
) -> None:
    """Serve recipes until SIGTERM, in the start-up order of the module docstring.

    Raises:
        ConfigError: bad input, or another serve holds the state file (``StoreInUse``).
    """
    from practiceflow.console.server import check_bind, console_for
    from practiceflow.ops import OpsMetrics, counted_session, ops_routes, serve_practices
    from practiceflow.service.netaddr import parse_listen

    where = "--console-listen"
    console_at = parse_listen(console, option=where, example="127.0.0.1:8470") if console else None
    if console_at is not None:
        check_bind(console_at[0], console_token)  # refuse before any request is sent
    stop = threading.Event()  # SIGTERM during start-up stops cleanly too
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with ExitStack() as stack:
        if listen_socket is not None:
            stack.callback(listen_socket.close)  # a refusal below closes it; serve takes it
        receiver = listen or os.environ.get(LISTEN_ENV)
        lease, path = None, sqlite_file(state)  # PostgreSQL: no lease (see service.lease)
        if path is not None:
            at = f"http://{console_at[0]}:{console_at[1]}/console/" if console_at else None
            lease = ServeLease(path).acquire(console=at, receiver=receiver)
            stack.callback(lease.release)
        registry = load_modules(list(modules_dirs))
        checked = [validate_recipe(path, registry=registry) for path in paths]
        metrics = OpsMetrics()
        names: list[str] = []
        session = stack.enter_context(counted_session(metrics.counter(lambda: names[0])))
        client = stack.enter_context(practice_client(api, state, session=session))
        key = practice_key(practice, client.settings.client_id)
        names.append(key)
        store = stack.enter_context(open_state(state))
        purge_by_setting(store)  # PRACTICEFLOW_RETENTION, once at start
        report = ServeReport(store, key, last_alive(store, key), unsubscribe=unsubscribe_on_exit)
        every, grace = silence_settings()

        settings = ServeOptions(
            public_url=public_url or os.environ.get(PUBLIC_URL_ENV) or None,
            listen=listen_address(receiver),
            listen_socket=listen_socket,
            since=since,
            unsubscribe=unsubscribe_on_exit,
            silence_every=every,
            silence_grace=grace,
            on_started=report.started,
            on_outcome=report.outcome,
            on_swept=report.swept,
            on_poll_started=lambda due: metrics.poll_started(key, due),
        )
        service = serve(checked, store, client, key, settings, stop=stop)
        stack.callback(service.close)  # a refusal below stops the receiver
        metrics.watch(store, serve_practices(key, client.budget, service.intake))
        if lease is not None and service.intake is not None:
            lease.update(receiver=service.intake.receiver_url)
        can_write = client.validate().can_write
        recipes = [validate_recipe(path, registry=registry, can_write=can_write) for path in paths]
        counted = stack.enter_context(RequestLog(store, key))
        client.budget.on_admit(counted.admitted)  # the console's budget chart
        stack.callback(report.stopped)  # after the sweeps and the intake stopped
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
        if console_at is not None:
            service.console = console_for(
                service, client, recipes, key, console_at, console_token, ops_routes(metrics)
            )
        service.install_signal_handlers()
        service.run()
