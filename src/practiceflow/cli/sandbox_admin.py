"""``practiceflow sandbox fire | fault | records | deliveries | requests | clock | reset``:
helpers over a running sandbox's admin surface, on loopback only (the sandbox binds nothing
else)."""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click
import requests

from practiceflow.errors import ConfigError, TransportError
from practiceflow.sandbox.config import DEFAULT_ADMIN_TOKEN, REGIONS
from practiceflow.service.netaddr import is_loopback

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


def _fire_help() -> str:
    lines = [f"  {name:<21} KEY: {meaning}" for name, (meaning, _) in EVENTS.items()]
    return "\n".join(lines)


@click.command("fire", epilog="\b\nEvents:\n" + _fire_help())
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
    shown = {
        name: record.get(name)
        for name in ("proposalKey", "formKey", "onboardingKey", "entityKey", "entityName")
        if isinstance(record, dict) and record.get(name) is not None
    }
    where = ", ".join(f"{name} {value}" for name, value in shown.items())
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
    optional = {"method": method, "pathPrefix": path_prefix, "retryAfter": retry_after}
    body.update({name: value for name, value in optional.items() if value is not None})
    if delay:
        body["delay"] = delay
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
    if advance is None:
        _echo(admin.call("GET", "/_admin/clock"))
    else:
        _echo(admin.call("POST", "/_admin/clock", {"advance": advance}))


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
