"""``practiceflow auth``: check the credentials the other commands will use."""

from __future__ import annotations

import json

import click

from practiceflow.cli.common import ApiOptions, api_options, build_client
from practiceflow.errors import EXIT_CODES


@click.group()
def auth() -> None:
    """Check the API credentials.

    \b
    Example:
      PRACTICEFLOW_CLIENT_ID=... PRACTICEFLOW_CLIENT_SECRET=... \\
        practiceflow auth check --base-url http://127.0.0.1:8765/anz
    """


@auth.command("check")
@api_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def check(api: ApiOptions, as_json: bool) -> None:
    """Show who the credentials belong to and whether they can write.

    Calls GET /api/v1/auth/validate once. Exit code 0 when authenticated, 3 when the
    credentials are refused (wrong ID or secret, inactive client, or the wrong region),
    2 when they are not configured.

    \b
    Examples:
      practiceflow auth check --profile acme
      practiceflow auth check --region uk --json
    """
    with build_client(api) as client:
        result = client.validate()
        if as_json:
            payload = result.model_dump(mode="json", by_alias=True)
            payload["baseUrl"] = client.base_url
            payload["authMethod"] = client.settings.auth_method
            click.echo(json.dumps(payload, indent=2, sort_keys=True))
        else:
            write = {True: "yes", False: "no (read-only: write routes answer 403)", None: "unknown"}
            click.echo(f"client:       {result.client_name or '(no name)'}")
            click.echo(f"client ID:    {result.client_id or client.settings.client_id}")
            click.echo(f"can write:    {write[result.can_write]}")
            click.echo(f"base URL:     {client.base_url}")
            click.echo(f"auth method:  {client.settings.auth_method}")
        if result.authenticated is False:
            if not as_json:
                click.echo(f"not authenticated: {result.message or 'no reason given'}", err=True)
            click.get_current_context().exit(EXIT_CODES["auth"])


COMMANDS: list[click.Command] = [auth]
