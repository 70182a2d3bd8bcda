"""How ``serve`` (and ``run`` without ``--once``) starts, in the order that loses nothing:
the state file's lease first (a second serve refuses before anything is sent), then the
receiver with every webhook trigger bound before the first request, then the credentials
check, then :func:`practiceflow.service.serve`. It prints ids and statuses, nothing secret."""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Collection, Sequence
from contextlib import ExitStack
from datetime import datetime, timedelta
from pathlib import Path

import click

from practiceflow.cli.common import ApiOptions
from practiceflow.cli.retention import purge_by_setting
from practiceflow.cli.state import open_state, practice_client, practice_key
from practiceflow.errors import ConfigError
from practiceflow.manifest import load_modules
from practiceflow.runner import Runner, RunOutcome, validate_recipe
from practiceflow.service.compose import ServeOptions, serve
from practiceflow.service.heartbeat import last_alive
from practiceflow.service.intake import LISTEN_ENV, PUBLIC_URL_ENV, TriggerIntake, listen_address
from practiceflow.service.silence import silence_settings
from practiceflow.service.state_location import ServeLease, sqlite_file
from practiceflow.service.sweep import SweepResult
from practiceflow.state import StateStore
from practiceflow.state.request_log import RequestLog


def serve_recipes(
    paths: Sequence[str],
    practice: str | None,
    state: str | None,
    modules_dirs: Sequence[Path],
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
    """Serve recipes until SIGTERM (a ConfigError for bad input, or when another serve holds
    the state file)."""
    from practiceflow.console.security import check_bind
    from practiceflow.console.server import console_for
    from practiceflow.ops import OpsMetrics, OpsPractice, counted_session, ops_routes
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
        lease, path = None, sqlite_file(state)  # PostgreSQL: no lease (see service.state_location)
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

        def served() -> list[OpsPractice] | None:
            """The practice once the intake has built its triggers (None while starting)."""
            built = service.intake.triggers if service.intake is not None else {}
            hooks = [name for name, one in built.items() if one.mode in ("webhook", "both")]
            return [OpsPractice(key, client.budget, tuple(sorted(hooks)))] if built else None

        metrics.watch(store, served)
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


def _say(line: str) -> None:
    click.echo(line, err=True)


def announce(intake: TriggerIntake, reused: Collection[str] = ()) -> None:
    """Print where the receiver listens and every URL subscribed (``reused``: ids kept)."""
    if intake.server is not None:
        _say(f"webhook receiver listening on {intake.server.url}")
    else:
        _say("no webhook receiver (no --public-url / PRACTICEFLOW_PUBLIC_URL): triggers poll")
    subscribed = {row.trigger_key: row for row in intake.store.list_subscriptions(intake.practice)}
    for key, trigger in intake.triggers.items():
        row = subscribed.get(key)
        line = f"trigger {key}: {trigger.mode}"
        if key in intake.in_doubt:
            meanwhile = "polled meanwhile" if intake.in_doubt[key] else "its events NOT received"
            line += f", subscription IN DOUBT, not repeated: {meanwhile}; see "
            line += "'practiceflow attention list'"
        elif row is not None and trigger.mode in ("webhook", "both"):
            how = "subscribed"
            if row.subscription_id in reused:
                how = f"reusing subscription {row.subscription_id} of"
            # The URL's path token routes deliveries: it is a secret.
            head, marker, _ = row.url.partition("/hooks/")
            url = f"{head}{marker}***" if marker else row.url
            line += f", {how} {row.event} at {url} ({row.status})"
        _say(line)


def duration(span: timedelta) -> str:
    """A span as people say it (``2 h 5 min``, ``42 s``)."""
    seconds = max(0, int(span.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {seconds} s"
    return f"{seconds} s"


class ServeReport:
    """The lines ``serve`` prints; ``down_since``: the last sign of life (None: first start)."""

    def __init__(
        self, store: StateStore, practice: str, down_since: datetime | None, *, unsubscribe: bool
    ) -> None:
        self.store = store
        self.practice = practice
        self.down_since = down_since
        self.back = store.now()
        self.unsubscribe = unsubscribe
        self.kept = {
            row.subscription_id
            for row in store.list_subscriptions(practice)
            if row.status == "active" and row.subscription_id
        }

    def started(self, intake: TriggerIntake) -> None:
        """The intake's ``on_started``: announce it, then what the catch-up brought."""
        announce(intake, frozenset(str(key) for key in self.kept))
        if self.down_since is not None:
            waiting = len(self.store.pending_events(self.practice, limit=100_000))
            down = duration(self.back - self.down_since)
            _say(f"caught up {waiting} event(s) after a downtime of {down}")

    def outcome(self, outcome: RunOutcome) -> None:
        """One line per run: event, recipe, result."""
        run = self.store.get_run(outcome.run_id)
        recipe = run.recipe if run is not None else "?"
        held = f" at {', '.join(outcome.held)}" if outcome.held else ""
        _say(f"run {outcome.run_id[:8]} {recipe} event {outcome.event_id}: {outcome.status}{held}")

    def swept(self, result: SweepResult) -> None:
        """What a sweep of a downtime found."""
        if result.closed:
            _say(
                f"gap of {result.trigger} closed by evidence: {result.found} event(s) in the "
                f"window, {len(result.recovered)} recovered by the sweep, none missing"
            )
        else:
            _say(
                f"gap of {result.trigger} could not be proven complete: needs attention "
                "(practiceflow attention list)"
            )

    def stopped(self) -> None:
        """The last line."""
        if self.unsubscribe:
            _say("serve: stopped; subscriptions removed (--unsubscribe-on-exit)")
        else:
            _say(
                "serve: stopped; subscriptions kept (the sender's retries reach the next start;"
                " remove them with 'practiceflow triggers unsubscribe')"
            )
