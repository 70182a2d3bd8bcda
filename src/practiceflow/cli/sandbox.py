"""``practiceflow sandbox``: run the local simulator of the Partner API on 127.0.0.1; its
subcommands (:mod:`practiceflow.cli.sandbox_admin`) drive a running one."""

from __future__ import annotations

import socket
from typing import Any

import click

from practiceflow.cli.sandbox_admin import SUBCOMMANDS
from practiceflow.errors import ConfigError
from practiceflow.sandbox.admin_catalogue import ADMIN_ROUTES, curl_example
from practiceflow.sandbox.config import REGIONS, SandboxConfig, parse_duration
from practiceflow.sandbox.practices import practice_credential
from practiceflow.service.netaddr import listen_tcp


def _admin_epilog() -> str:
    lines = ["\b", "Admin routes (header X-Admin-Token; ?region=anz|uk|za where it matters):"]
    for route in ADMIN_ROUTES:
        lines.append(f"  {route.method} {route.path}: {route.summary}")
        example = curl_example(route, "http://127.0.0.1:8765", "sandbox-admin-token")
        lines.append(f"      {example}")
    return "\n".join(lines)


def _duration(text: str, option: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


def _bind(host: str, port: int) -> socket.socket:
    try:
        return listen_tcp(host, port)
    except OSError as exc:
        message = f"--port {port}: cannot listen on {host} ({exc.strerror or exc})"
        raise ConfigError(message) from None


def export_lines(root: str, config: SandboxConfig, region: str = "anz") -> list[str]:
    """The ``export PRACTICEFLOW_*=...`` lines that point every command at this sandbox."""
    credential = config.credentials(region)["rw"]
    return [
        f"export PRACTICEFLOW_BASE_URL={root}/{region}",
        f"export PRACTICEFLOW_CLIENT_ID={credential.client_id}",
        f"export PRACTICEFLOW_CLIENT_SECRET={credential.secret}",
        f"export PRACTICEFLOW_SANDBOX_URL={root}",
        f"export PRACTICEFLOW_SANDBOX_ADMIN_TOKEN={config.admin_token}",
    ]


@click.group("sandbox", invoke_without_command=True, epilog=_admin_epilog(), no_args_is_help=False)
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
    "--latency",
    default="0ms",
    show_default=True,
    callback=lambda ctx, param, value: _duration(value, "--latency"),
    help="Hold every API answer back this long, as a real API's round trip (150ms, 0.15s).",
)
@click.option(
    "--jitter",
    default="0ms",
    show_default=True,
    callback=lambda ctx, param, value: _duration(value, "--jitter"),
    help="Up to this much more per answer, at random.",
)
@click.option(
    "--practices",
    default=1,
    show_default=True,
    type=click.IntRange(1, 65536),
    help="Practices per region, each with its own credentials, budget, records and "
    "webhooks (practice K's Client ID has K in hex in its second group).",
)
@click.option(
    "--admin-token",
    envvar="PRACTICEFLOW_SANDBOX_ADMIN_TOKEN",
    help="X-Admin-Token of /_admin (default: sandbox-admin-token).",
)
@click.option(
    "--client-id",
    envvar="PRACTICEFLOW_SANDBOX_CLIENT_ID",
    help="Client ID of the anz read-write client.",
)
@click.option(
    "--client-secret",
    envvar="PRACTICEFLOW_SANDBOX_CLIENT_SECRET",
    help="Secret of the anz read-write client.",
)
@click.option(
    "--variants",
    "preset",
    metavar="PRESET",
    help="Answers to the spec's open questions: default, hostile or random:SEED "
    "(see src/practiceflow/sandbox/GUESSES.md, section Variants).",
)
@click.option(
    "--variant",
    "pairs",
    multiple=True,
    metavar="TOPIC=ANSWER",
    help="Play one answer of one open question (repeatable; on top of --variants).",
)
@click.pass_context
def sandbox(
    ctx: click.Context,
    /,
    host: str,
    port: int,
    rate_per_minute: int,
    rate_per_hour: int,
    rate_per_day: int,
    preset: str | None,
    pairs: tuple[str, ...],
    **overrides: Any,
) -> None:
    """Serve a local simulator of the Partner API until Ctrl-C, or drive a running one.

    Alone, it binds loopback only, seeds each region (anz, uk, za) from --seed, and prints
    the base URL of each region, its throwaway credentials, the admin token, and the
    'export PRACTICEFLOW_*=...' lines that point the other commands at it. The
    subcommands talk to a running sandbox (PRACTICEFLOW_SANDBOX_URL, default
    http://127.0.0.1:8765): fire an event, arm a fault, read its records and logs.

    \b
    Examples:
      practiceflow sandbox
      practiceflow sandbox --port 9000 --seed 7 --entities 100000 --rate-per-minute 600
      practiceflow sandbox --practices 100 --latency 150ms --jitter 50ms
      practiceflow sandbox fire proposal-accepted
      practiceflow sandbox fault 429 --count 3 --retry-after 2
      practiceflow sandbox records bills
      practiceflow sandbox --variants hostile --variant rounding=per_total
      practiceflow sandbox --latency 150ms --jitter 50ms
      curl -H 'X-SVC-Auth-ID: 5a4db0c0-0000-4000-8000-000000000011' \\
           -H 'X-SVC-Auth-Key: sandbox-anz-rw-secret' \\
           http://127.0.0.1:8765/anz/api/v1/auth/validate
    """
    if ctx.invoked_subcommand is not None:
        return
    from practiceflow.sandbox.config import RateLimits
    from practiceflow.sandbox.server import check_loopback, serve_forever
    from practiceflow.sandbox.variants import Variants

    try:
        bind = check_loopback(host)
        variants = Variants.parse(preset, pairs)
        rates = RateLimits(rate_per_minute, rate_per_hour, rate_per_day)
        # The other options are the config's fields by name (None: the environment's).
        config = SandboxConfig.from_env(rate_limits=rates, variants=variants, **overrides)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    # Bound before the banner: once the export lines are printed, the port answers.
    sock = _bind(bind, port)
    port = int(sock.getsockname()[1])
    shown = f"[{bind}]" if ":" in bind else bind
    root = f"http://{shown}:{port}"
    click.echo(
        f"practiceflow sandbox on {root}  (seed {config.seed}, {config.entities} entities "
        "per region)"
    )
    if variants.differences():
        shown_variants = ", ".join(f"{k}={v}" for k, v in variants.differences().items())
        click.echo(f"variants: {shown_variants}")
    latency, jitter, practices = config.latency, config.jitter, config.practices
    if latency or jitter:
        held = f"{latency * 1000:g} ms" + (f" + up to {jitter * 1000:g} ms" if jitter else "")
        click.echo(f"every API answer is held back {held}")
    if practices > 1:
        sample = practice_credential(practices - 1, "anz")
        click.echo(
            f"{practices} practices per region: practice K's clients have K in hex in the "
            f"Client ID's second group and secret sandbox-pK-<region>-<kind>-secret, e.g. "
            f"{sample.client_id} / {sample.secret}; admin routes take ?practice=K"
        )
    click.echo(
        f"OpenAPI: {root}/openapi.json   admin: {root}/_admin  X-Admin-Token: {config.admin_token}"
    )
    for region in REGIONS:
        click.echo(f"\n{region}: {root}/{region}")
        for kind, credential in config.credentials(region).items():
            click.echo(f"  {kind:<8} client id {credential.client_id}  secret {credential.secret}")
    click.echo("\nPoint the other commands at the anz practice (paste into another shell):")
    for line in export_lines(root, config):
        click.echo(f"  {line}")
    click.echo(
        "\nThese credentials are the sandbox's own throwaway values. Admin routes: "
        "'practiceflow sandbox --help'. Ctrl-C stops it.",
    )
    serve_forever(config, bind, port, sock)


for _command in SUBCOMMANDS:
    sandbox.add_command(_command)

COMMANDS: list[click.Command] = [sandbox]
