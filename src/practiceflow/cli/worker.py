"""``practiceflow worker``: run one replica of a fleet (PostgreSQL state, procrastinate);
the fleet itself is :mod:`practiceflow.fleet` and docs/deploy.md."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

import click

from practiceflow.errors import ConfigError, PracticeflowError, StoreError
from practiceflow.service.netaddr import parse_listen


@click.command()
@click.option(
    "--fleet",
    "fleet_file",
    metavar="FILE",
    envvar="PRACTICEFLOW_FLEET",
    required=True,
    type=click.Path(dir_okay=False),
    help="The fleet file: practices, their credentials and recipes (env PRACTICEFLOW_FLEET).",
)
@click.option(
    "--state",
    metavar="URL",
    envvar="PRACTICEFLOW_STATE",
    required=True,
    help="The fleet's PostgreSQL database, postgresql://... (env PRACTICEFLOW_STATE).",
)
@click.option("--concurrency", default=1, show_default=True, help="Jobs run at once.")
@click.option("--heartbeat", default=10.0, show_default=True, help="Seconds between heartbeats.")
@click.option(
    "--stalled-after",
    default=30.0,
    show_default=True,
    help="Seconds without a heartbeat after which a replica's jobs go to others.",
)
@click.option("--sweep-every", default=30, show_default=True, help="Seconds between sweeps.")
@click.option(
    "--give-up-after",
    default=300.0,
    show_default=True,
    help="Seconds without the database (a restart rides it out) after which the replica "
    "stops with exit status 4.",
)
@click.option(
    "--listen",
    metavar="HOST:PORT",
    envvar="PRACTICEFLOW_LISTEN",
    help="Serve the webhook receiver here (env PRACTICEFLOW_LISTEN); needs --public-url.",
)
@click.option(
    "--public-url",
    metavar="URL",
    envvar="PRACTICEFLOW_PUBLIC_URL",
    help="Where the API reaches the replicas' receivers, such as the load balancer's "
    "https://hooks.example.com (env PRACTICEFLOW_PUBLIC_URL); the same for every replica.",
)
@click.option(
    "--ops-listen",
    metavar="HOST:PORT",
    envvar="PRACTICEFLOW_OPS_LISTEN",
    help="Serve /healthz, /readyz and /metrics here (env PRACTICEFLOW_OPS_LISTEN); with "
    "--listen they are also served there.",
)
@click.option(
    "--polls",
    type=click.Choice(["owned", "queue"]),
    default="owned",
    show_default=True,
    help="owned: the replicas share the practices by lease and each polls its own "
    "in-process; queue: every poll is a job any replica takes.",
)
@click.option(
    "--lease",
    default=30.0,
    show_default=True,
    help="Seconds after which a replica that stopped renewing loses its practices (--polls owned).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log every job.")
def worker(
    fleet_file: str,
    state: str,
    concurrency: int,
    heartbeat: float,
    stalled_after: float,
    sweep_every: int,
    give_up_after: float,
    listen: str | None,
    public_url: str | None,
    ops_listen: str | None,
    polls: str,
    lease: float,
    verbose: bool,
) -> None:
    """Run one replica of a fleet until SIGTERM.

    \b
    Examples:
      practiceflow db migrate --state postgresql://pf:secret@db/pf
      practiceflow worker --fleet fleet.yaml --state postgresql://pf:secret@db/pf
      practiceflow worker --fleet fleet.yaml --state postgresql://pf:secret@db/pf \\
          --listen 0.0.0.0:8080 --public-url https://hooks.example.com
      practiceflow worker --fleet fleet.yaml --state "$URL" --ops-listen 0.0.0.0:9464
    """
    from practiceflow.fleet.fleet_file import load_fleet
    from practiceflow.fleet.leases import PracticeLeases
    from practiceflow.fleet.outage import FleetPresence
    from practiceflow.fleet.owner import PracticeOwner
    from practiceflow.fleet.queue import (
        DELETE_JOBS,
        FETCH_EVERY_S,
        OWNED_FETCH_EVERY_S,
        make_app,
    )
    from practiceflow.fleet.runtime import Fleet
    from practiceflow.fleet.webhook_intake import FleetWebhooks
    from practiceflow.fleet.worker_loop import run_worker
    from practiceflow.ops import OpsMetrics, OpsServer, ops_routes
    from practiceflow.state import PostgresStore, describe_url

    if not state.lower().startswith(("postgresql://", "postgres://")):
        message = f"worker --state: got {state.partition('://')[0]!r}; expected a postgresql:// URL"
        raise ConfigError(message)
    if (listen is None) != (public_url is None):
        given, missing = ("--listen", "--public-url") if listen else ("--public-url", "--listen")
        message = f"worker {given}: got it without {missing}; give both to receive webhooks"
        raise ConfigError(message)
    if public_url is not None and public_url.strip().lower() == "local":
        message = (
            "worker --public-url: got 'local'; a fleet needs the URL of the load balancer "
            "in front of its replicas, the same for every replica"
        )
        raise ConfigError(message)
    address = None
    if listen is not None:
        address = parse_listen(listen, option="--listen", example="0.0.0.0:8080")
    ops_address = None
    if ops_listen is not None:
        ops_address = parse_listen(ops_listen, option="--ops-listen", example="127.0.0.1:9464")
    if lease <= 0:
        message = f"worker --lease: got {lease:g}; expected seconds > 0"
        raise ConfigError(message)
    if concurrency < 1:
        message = f"worker --concurrency: got {concurrency}; expected 1 or more"
        raise ConfigError(message)
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = load_fleet(fleet_file)
    app = make_app(state, pool_size=concurrency + 3)
    # The owner's threads queue events through a synchronous app (the worker's is async).
    defer_app = make_app(state, pool_size=4, sync=True)
    # The receiver's threads store deliveries too: a few connections more for them.
    store_pool = concurrency + 2 + (4 if address is not None else 0)
    with PostgresStore(state, pool_size=store_pool) as store, app.open(), defer_app.open():
        _require_queue(state, describe_url(state))
        served: list[Any] = []
        owner: PracticeOwner | None = None
        owned = polls == "owned"

        def reports(practice: str) -> bool:
            """An owning replica reports what it owns, and practices no replica serves."""
            return owner is None or practice in owner.owned or practice not in config.practices

        metrics = OpsMetrics(store, lambda: served or None, reports)
        fleet = Fleet(
            config,
            store,
            state,
            app,
            public_url=public_url,
            metrics=metrics,
            budget_connections=concurrency + 2,
            slots_per_practice=max(1, concurrency // 4),
            owned=owned,
        )
        fleet.defer_app = defer_app
        hooks: FleetWebhooks | None = None
        presence: FleetPresence | None = None
        ops: OpsServer | None = None
        gave_up = False
        try:
            fleet.schedule(
                sweep_every=sweep_every, retry_stalled_every=max(1, int(heartbeat)), polls=not owned
            )
            if owned:
                leases = PracticeLeases(state, fleet.practices, lease_s=lease)
                owner = PracticeOwner(
                    fleet, leases, threads=max(4, concurrency), sweep_every=sweep_every
                ).start()
            if ops_address is not None:
                ops = OpsServer(metrics, *ops_address).start()
                click.echo(f"worker: /healthz /readyz /metrics on {ops.url}", err=True)
            if address is not None:
                hooks = FleetWebhooks(fleet, state, address)
                hooks.receiver.app.router.routes.extend(ops_routes(metrics))
                server = hooks.start()
                click.echo(f"worker: receiving webhooks on {server.url}", err=True)
                presence = FleetPresence(fleet, state, every=heartbeat, stale_after=stalled_after)
                listed = presence.join()  # the window of an outage ends once we receive
                if listed:
                    click.echo(
                        f"worker: no replica received webhooks since the fleet's last sign of "
                        f"life; {len(listed)} window(s) listed as needing attention: "
                        "practiceflow attention list --state URL",
                        err=True,
                    )
            served.extend(fleet.ops_practices())
            signal.signal(signal.SIGHUP, lambda *_: _reload(fleet))
            click.echo(
                f"worker: {len(fleet.practices)} practice(s) on {describe_url(state)}", err=True
            )
            asyncio.run(
                run_worker(
                    app,
                    state,
                    describe_url(state),
                    concurrency=concurrency,
                    give_up_after=give_up_after,
                    wait=True,
                    update_heartbeat_interval=heartbeat,
                    stalled_worker_timeout=stalled_after,
                    additional_context=fleet.job_context(stalled_after=stalled_after),
                    delete_jobs=DELETE_JOBS,
                    fetch_job_polling_interval=OWNED_FETCH_EVERY_S if owned else FETCH_EVERY_S,
                )
            )
        except StoreError:
            gave_up = True
            raise
        finally:
            if owner is not None:
                # The leases go back: the other replicas take them now. After giving up,
                # no poll under way can write its cursors: none is waited for.
                owner.stop(patience=1.0 if gave_up else 20.0)
            if hooks is not None:
                hooks.stop()
            if presence is not None:
                presence.leave()  # after the receiver stopped: the last sign of life
            if ops is not None:
                ops.stop()
            fleet.close()


def _reload(fleet: Any) -> None:
    """SIGHUP: reload the recipe files, all or none (the reason printed)."""
    try:
        fleet.reload_recipes()
    except PracticeflowError as exc:
        click.echo(f"worker: reload refused, the recipes run are unchanged: {exc}", err=True)
        return
    click.echo("worker: recipes reloaded; runs in flight keep their versions", err=True)


def _require_queue(url: str, where: str) -> None:
    import psycopg

    with psycopg.connect(url) as connection:
        row = connection.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
    if row is None or row[0] is None:
        message = f"{where} has no job queue yet; run 'practiceflow db migrate --state URL' first"
        raise ConfigError(message)


COMMANDS: list[click.Command] = [worker]
