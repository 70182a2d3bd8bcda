"""CLI commands of the modules family (placeholder until its issue lands)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
