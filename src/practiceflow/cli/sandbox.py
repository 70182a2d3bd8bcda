"""``practiceflow sandbox``: run the local simulator of the Partner API on 127.0.0.1."""

from __future__ import annotations

import click

from practiceflow.errors import ConfigError
from practiceflow.sandbox.config import REGIONS, SandboxConfig

__all__ = ["COMMANDS", "sandbox"]


@click.command("sandbox")
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address only.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the data.")
@click.option(
    "--entities",
    default=300,
    show_default=True,
    type=click.IntRange(0, 100_000),
    help="Entities seeded per region.",
)
@click.option(
    "--page-size",
    default=100,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Fixed page size of the entities, users and groups lists.",
)
@click.option("--rate-per-minute", default=60, show_default=True, type=click.IntRange(1))
@click.option("--rate-per-hour", default=1000, show_default=True, type=click.IntRange(1))
@click.option("--rate-per-day", default=10000, show_default=True, type=click.IntRange(1))
@click.option("--wallet", default=1000.0, show_default=True, type=float, help="Wallet balance.")
@click.option("--ledger-connected", is_flag=True, help="Start with a connected ledger.")
@click.option(
    "--admin-token",
    envvar="PRACTICEFLOW_SANDBOX_ADMIN_TOKEN",
    default=None,
    help="X-Admin-Token of /_admin (default: sandbox-admin-token).",
)
@click.option(
    "--client-id",
    envvar="PRACTICEFLOW_SANDBOX_CLIENT_ID",
    default=None,
    help="Client ID of the anz read-write client.",
)
@click.option(
    "--client-secret",
    envvar="PRACTICEFLOW_SANDBOX_CLIENT_SECRET",
    default=None,
    help="Secret of the anz read-write client.",
)
def sandbox(
    host: str,
    port: int,
    seed: int,
    entities: int,
    page_size: int,
    rate_per_minute: int,
    rate_per_hour: int,
    rate_per_day: int,
    wallet: float,
    ledger_connected: bool,
    admin_token: str | None,
    client_id: str | None,
    client_secret: str | None,
) -> None:
    """Serve a local simulator of the Partner API until Ctrl-C.

    It binds loopback only, seeds each region (anz, uk, za) from --seed, and prints the
    base URL of each region, its throwaway credentials and the admin token.

    \b
    Examples:
      practiceflow sandbox
      practiceflow sandbox --port 9000 --seed 7 --entities 100000 --rate-per-minute 600
      curl -H 'X-SVC-Auth-ID: 5a4db0c0-0000-4000-8000-000000000011' \\
           -H 'X-SVC-Auth-Key: sandbox-anz-rw-secret' \\
           http://127.0.0.1:8765/anz/api/v1/auth/validate
    """
    from practiceflow.sandbox.config import RateLimits
    from practiceflow.sandbox.server import check_loopback, serve_forever

    try:
        bind = check_loopback(host)
        config = SandboxConfig.from_env(
            seed=seed,
            entities=entities,
            page_size=page_size,
            rate_limits=RateLimits(rate_per_minute, rate_per_hour, rate_per_day),
            wallet=wallet,
            ledger_connected=ledger_connected,
            admin_token=admin_token,
            client_id=client_id,
            client_secret=client_secret,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    shown = f"[{bind}]" if ":" in bind else bind
    root = f"http://{shown}:{port}"
    click.echo(f"practiceflow sandbox on {root}  (seed {seed}, {entities} entities per region)")
    click.echo(
        f"OpenAPI: {root}/openapi.json   admin: {root}/_admin  X-Admin-Token: {config.admin_token}"
    )
    for region in REGIONS:
        click.echo(f"\n{region}: {root}/{region}")
        for kind, credential in config.credentials(region).items():
            click.echo(f"  {kind:<8} client id {credential.client_id}  secret {credential.secret}")
    click.echo("\nThese credentials are the sandbox's own throwaway values. Ctrl-C stops it.")
    serve_forever(config, bind, port)


COMMANDS: list[click.Command] = [sandbox]
