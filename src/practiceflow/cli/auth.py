"""CLI commands of the auth family (placeholder until its issue lands)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
