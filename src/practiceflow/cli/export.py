"""``practiceflow export PLATFORM --out DIR``: write a platform connector from the modules."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from practiceflow.cli.common import modules_option
from practiceflow.errors import ConfigError
from practiceflow.export import exporters, generate, stale_files, write_export


@click.command("export")
@click.argument("platform", type=click.Choice(sorted(exporters())), metavar="PLATFORM")
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder to write into (created when missing); hand-written files there are kept.",
)
@modules_option
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 when the folder differs from a fresh export (for CI).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def export_command(
    platform: str, out: Path, modules_dirs: tuple[Path, ...], check: bool, as_json: bool
) -> None:
    """Generate the PLATFORM connector (zapier, n8n, openapi) from the actions and triggers.

    \b
    Examples:
      practiceflow export zapier --out connectors/zapier
      practiceflow export openapi --out connectors/openapi --check
      practiceflow export zapier --out /tmp/z && cd /tmp/z && npm ci

    Files the exporter owns are listed in DIR/GENERATED.json; it replaces exactly those and
    refuses to overwrite anything else (such as a hand-written test harness). Exit codes:
    0 written (or current with --check), 1 stale (--check), 2 a module cannot be exported.
    """
    files = generate(platform, modules_dirs)
    if check:
        stale = stale_files(platform, files, out)
        if as_json:
            click.echo(json.dumps({"platform": platform, "out": str(out), "stale": stale}))
        elif stale:
            click.echo(f"{out}: stale, re-run 'practiceflow export {platform} --out {out}':")
            for name in stale:
                click.echo(f"  {name}")
        else:
            click.echo(f"{out}: up to date ({len(files)} files)")
        if stale:
            raise SystemExit(1)
        return
    if out.exists() and not out.is_dir():
        message = f"--out {out}: not a folder"
        raise ConfigError(message)
    result = write_export(platform, files, out)
    if as_json:
        click.echo(json.dumps({"platform": platform, **asdict(result), "out": str(out)}))
        return
    click.echo(
        f"{platform}: {len(result.written)} written, {len(result.unchanged)} unchanged, "
        f"{len(result.removed)} removed in {out}"
    )


COMMANDS: list[click.Command] = [export_command]
