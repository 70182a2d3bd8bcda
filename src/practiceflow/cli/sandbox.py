"""CLI commands of the sandbox family (placeholder until its issue lands)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
