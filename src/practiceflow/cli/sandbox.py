"""``practiceflow sandbox``: run the local simulator of the Partner API on 127.0.0.1; its
subcommands (fire, fault, records, deliveries, requests, clock, reset) drive a running one
through its admin surface, on loopback only (the sandbox binds nothing else)."""

from __future__ import annotations

import functools
import json
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click
import requests

from practiceflow.errors import ConfigError, TransportError
from practiceflow.sandbox.admin_catalogue import ADMIN_ROUTES, curl_example
from practiceflow.sandbox.config import (
    DEFAULT_ADMIN_TOKEN,
    REGIONS,
    SandboxConfig,
    parse_duration,
    practice_credential,
)
from practiceflow.service.netaddr import is_loopback, listen_tcp


def _admin_epilog() -> str:
    lines = ["\b", "Admin routes (header X-Admin-Token; ?region=anz|uk|za where it matters):"]
    for route in ADMIN_ROUTES:
        lines.append(f"  {route.method} {route.path}: {route.summary}")
        example = curl_example(route, "http://127.0.0.1:8765", "sandbox-admin-token")
        lines.append(f"      {example}")
    return "\n".join(lines)


def _duration(ctx: click.Context, param: click.Parameter, text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:  # click names the option
        raise click.BadParameter(str(exc), ctx, param) from None


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
    callback=_duration,
    help="Hold every API answer back this long, as a real API's round trip (150ms, 0.15s).",
)
@click.option(
    "--jitter",
    default="0ms",
    show_default=True,
    callback=_duration,
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
      practiceflow sandbox --variants hostile --variant rounding=per_total
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
    sock = _bind(bind, port)  # before the banner: once the export lines are printed, it answers
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


F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class SandboxAdmin:
    """A client of one running sandbox's admin surface (``url`` on loopback)."""

    url: str
    token: str
    region: str

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """Call an admin route and return its JSON answer (a TransportError when no sandbox
        answers, a ConfigError quoting its detail when it refuses)."""
        separator = "&" if "?" in path else "?"
        target = f"{self.url}{path}{separator}region={self.region}"
        with requests.Session() as session:
            session.trust_env = False  # loopback only: never through a proxy
            try:
                answer = session.request(
                    method, target, json=body, headers={"X-Admin-Token": self.token}, timeout=30
                )
            except requests.RequestException as exc:
                reason = (
                    f"no sandbox answers at {self.url} ({type(exc).__name__}); start one with "
                    "'practiceflow sandbox' or set PRACTICEFLOW_SANDBOX_URL"
                )
                raise TransportError(method, path, reason) from None
        try:
            data = answer.json()
        except ValueError:
            data = None
        if answer.status_code >= 400:
            detail = data.get("detail") if isinstance(data, dict) else answer.text[:200]
            message = f"sandbox {method} {path}: HTTP {answer.status_code}: {detail}"
            raise ConfigError(message)
        return data


def _admin_options(func: F) -> F:
    @click.option(
        "--url",
        envvar="PRACTICEFLOW_SANDBOX_URL",
        default="http://127.0.0.1:8765",
        show_default=True,
        help="Root URL of the running sandbox (env PRACTICEFLOW_SANDBOX_URL).",
    )
    @click.option(
        "--admin-token",
        envvar="PRACTICEFLOW_SANDBOX_ADMIN_TOKEN",
        default=DEFAULT_ADMIN_TOKEN,
        help="Its X-Admin-Token (env PRACTICEFLOW_SANDBOX_ADMIN_TOKEN).",
    )
    @click.option(
        "--region",
        type=click.Choice(REGIONS),
        default=REGIONS[0],
        show_default=True,
        help="The practice's region.",
    )
    @functools.wraps(func)
    def wrapper(*args: Any, url: str, admin_token: str, region: str, **kwargs: Any) -> Any:
        parts = urlsplit(url)
        if parts.scheme != "http" or not is_loopback(parts.hostname or ""):
            message = f"--url: got {url!r}; expected the sandbox's http:// URL on 127.0.0.1"
            raise ConfigError(message)
        kwargs["admin"] = SandboxAdmin(url.rstrip("/"), admin_token, region)
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]  # same call shape for click's purposes


def _echo(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _fire_proposal(admin: SandboxAdmin, key: str | None) -> Any:
    if not key:  # an open proposal of an Active client
        entities = admin.call("GET", "/_admin/records/entities")
        active = {row["entityKey"] for row in entities if row.get("status") == "Active"}
        for proposal in admin.call("GET", "/_admin/records/proposals"):
            if proposal.get("entityKey") in active and proposal.get("status") != "Accepted":
                key = str(proposal["proposalKey"])
                break
        else:
            message = "the sandbox has no open proposal of an Active client; pass a KEY"
            raise ConfigError(message)
    return admin.call("POST", f"/_admin/proposals/{key}/accept", {})


def _fire_eform(admin: SandboxAdmin, key: str | None) -> Any:
    if not key:
        forms = admin.call("GET", "/_admin/records/eforms")
        key = next((str(f["formKey"]) for f in forms if f.get("status") != "Submitted"), None)
        if key is None:
            message = (
                "the sandbox has no eForm waiting to be submitted; send one (send_eform) first"
            )
            raise ConfigError(message)
    return admin.call("POST", f"/_admin/eforms/{key}/submit", {})


def _fire_onboarding(admin: SandboxAdmin, key: str | None) -> Any:
    if not key:
        jobs = admin.call("GET", "/_admin/records/onboardings")
        key = next((str(j["onboardingKey"]) for j in jobs if j.get("status") != "Completed"), None)
        if key is None:
            message = (
                "the sandbox has no onboarding to complete; create one (create_onboarding) first"
            )
            raise ConfigError(message)
    return admin.call("POST", f"/_admin/onboardings/{key}/complete", {})


def _entity_firer(status: str) -> Callable[[SandboxAdmin, str | None], Any]:
    def fire(admin: SandboxAdmin, name: str | None) -> Any:
        body = {
            "entityName": name or f"Sandbox {status} {uuid.uuid4().hex[:6]}",
            "entityType": "Company",
            "clientStatus": status,
        }
        return admin.call("POST", "/_admin/entities", body)

    return fire


#: Event name -> (what KEY means, how to fire it).
EVENTS: dict[str, tuple[str, Callable[[SandboxAdmin, str | None], Any]]] = {
    "proposal-accepted": ("a proposalKey (default: an open proposal)", _fire_proposal),
    "eform-submitted": ("a formKey (default: a sent eForm)", _fire_eform),
    "onboarding-completed": ("an onboardingKey (default: an open one)", _fire_onboarding),
    "client-created": ("the new client's name", _entity_firer("Active")),
    "lead-created": ("the new lead's name", _entity_firer("Lead")),
}


_EVENTS_HELP = [f"  {name:<21} KEY: {meaning}" for name, (meaning, _) in EVENTS.items()]


@click.command("fire", epilog="\b\nEvents:\n" + "\n".join(_EVENTS_HELP))
@click.argument("event", type=click.Choice(list(EVENTS)))
@click.argument("key", required=False)
@_admin_options
def fire(event: str, key: str | None, admin: SandboxAdmin) -> None:
    """Make the sandbox fire an event (webhook deliveries go to its subscribers).

    \b
    Examples:
      practiceflow sandbox fire proposal-accepted
      practiceflow sandbox fire onboarding-completed
      practiceflow sandbox fire client-created "Harbour Trust"
    """
    _, firer = EVENTS[event]
    answer = firer(admin, key)
    record = answer
    if isinstance(answer, dict) and "eventId" in answer:
        record = next(value for name, value in answer.items() if name != "eventId")
    where = ", ".join(
        f"{name} {record[name]}"
        for name in ("proposalKey", "formKey", "onboardingKey", "entityKey", "entityName")
        if isinstance(record, dict) and record.get(name) is not None
    )
    event_id = answer.get("eventId") if isinstance(answer, dict) else None
    suffix = f" (event {event_id})" if event_id else ""
    click.echo(f"fired {event}: {where}{suffix}")


_FAULT_CHOICES = ["rate_limit", "429", "server_error", "500", "slow", "drop", "list", "clear"]


@click.command("fault")
@click.argument("kind", type=click.Choice(_FAULT_CHOICES))
@click.option("--count", default=1, show_default=True, type=click.IntRange(1, 100_000))
@click.option("--method", help="Only requests with this method (GET, POST...).")
@click.option("--path-prefix", help="Only paths starting with this (/api/v1/bills).")
@click.option("--retry-after", type=click.IntRange(0), help="429: Retry-After.")
@click.option("--delay", default=0.0, type=click.FloatRange(0, 120), help="slow: seconds held.")
@_admin_options
def fault(
    kind: str,
    count: int,
    method: str | None,
    path_prefix: str | None,
    retry_after: int | None,
    delay: float,
    admin: SandboxAdmin,
) -> None:
    """Arm a fault for the next COUNT matching API requests; 'list' and 'clear' too.

    Kinds: rate_limit (429), server_error (500), slow (the answer waits --delay s), drop
    (the sandbox acts, then closes the connection unanswered: a write in doubt).

    \b
    Examples:
      practiceflow sandbox fault 429 --count 3 --retry-after 2
      practiceflow sandbox fault drop --method POST --path-prefix /api/v1/bills
      practiceflow sandbox fault list
      practiceflow sandbox fault clear
    """
    if kind == "list":
        _echo(admin.call("GET", "/_admin/faults"))
        return
    if kind == "clear":
        admin.call("DELETE", "/_admin/faults")
        click.echo("no fault armed")
        return
    body: dict[str, Any] = {"kind": kind, "count": count, "region": admin.region}
    optional: dict[str, Any] = {"method": method, "pathPrefix": path_prefix}
    optional.update(retryAfter=retry_after, delay=delay or None)
    body.update({name: value for name, value in optional.items() if value is not None})
    _echo(admin.call("POST", "/_admin/faults", body))


_KINDS = [
    "entities",
    "leads",
    "contacts",
    "groups",
    "bills",
    "proposals",
    "eforms",
    "onboardings",
    "subscriptions",
    "id-verifications",
    "recurring",
    "users",
]


@click.command("records")
@click.argument("kind", type=click.Choice(_KINDS))
@click.option("--limit", default=20, show_default=True, type=click.IntRange(0), help="0: all.")
@_admin_options
def records(kind: str, limit: int, admin: SandboxAdmin) -> None:
    """Print the sandbox's stored rows of one kind as JSON (the last LIMIT).

    \b
    Examples:
      practiceflow sandbox records bills
      practiceflow sandbox records proposals --limit 3
    """
    rows = admin.call("GET", f"/_admin/records/{kind}")
    _echo(rows[-limit:] if limit else rows)


@click.command("deliveries")
@_admin_options
def deliveries(admin: SandboxAdmin) -> None:
    """Print the webhook delivery log (one row per attempt).

    \b
    Example:
      practiceflow sandbox deliveries
    """
    _echo(admin.call("GET", "/_admin/deliveries"))


@click.command("requests")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(0), help="0: all.")
@_admin_options
def requests_log(limit: int, admin: SandboxAdmin) -> None:
    """Print the last API requests the sandbox received.

    \b
    Example:
      practiceflow sandbox requests --limit 5
    """
    rows = admin.call("GET", "/_admin/requests")
    _echo(rows[-limit:] if limit else rows)


@click.command("clock")
@click.option("--advance", type=float, help="Move the clock by these seconds.")
@_admin_options
def clock(advance: float | None, admin: SandboxAdmin) -> None:
    """Show the sandbox's clock, or move it with --advance.

    \b
    Examples:
      practiceflow sandbox clock
      practiceflow sandbox clock --advance 3600
    """
    body = None if advance is None else {"advance": advance}
    _echo(admin.call("GET" if body is None else "POST", "/_admin/clock", body))


@click.command("reset")
@_admin_options
def reset(admin: SandboxAdmin) -> None:
    """Put the sandbox back to its seed data.

    \b
    Example:
      practiceflow sandbox reset
    """
    admin.call("POST", "/_admin/reset", {})
    click.echo("sandbox reset to its seed")


SUBCOMMANDS: list[click.Command] = [fire, fault, records, deliveries, requests_log, clock, reset]

for _command in SUBCOMMANDS:
    sandbox.add_command(_command)

COMMANDS: list[click.Command] = [sandbox]
