"""``practiceflow replay``, ``recipes check`` and ``runs recipe``: recipe versions tried on
recorded runs, nothing sent (:mod:`practiceflow.versions`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from practiceflow.cli.common import echo_json, json_option, modules_option, terminal
from practiceflow.cli.retention import parse_since
from practiceflow.cli.state import open_state, run_or_fail, state_option
from practiceflow.errors import ConfigError
from practiceflow.manifest import load_modules
from practiceflow.runner import validate_recipe
from practiceflow.state import RunRecord
from practiceflow.versions import (
    Replay,
    ReplayedStep,
    RunCheck,
    check_runs,
    in_flight,
    load_version,
    migrate,
    recipe_version,
    replay,
    short,
)


def _leaves(value: Any, at: str = "") -> dict[str, Any]:
    """Every leaf of a JSON value by its path (``json.lineItems[0].amount``)."""
    if isinstance(value, dict):
        children = [(f"{at}.{key}" if at else str(key), child) for key, child in value.items()]
    elif isinstance(value, list):
        children = [(f"{at}[{index}]", child) for index, child in enumerate(value)]
    else:
        return {at: value}
    found = {
        path: leaf for where, child in children for path, leaf in _leaves(child, where).items()
    }
    return found or ({at: []} if isinstance(value, list) else {})


def differences(sent: Any, would: Any) -> list[str]:
    """What a write would send otherwise, one line per changed field."""
    before, after = _leaves(sent or {}), _leaves(would or {})
    lines = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path, "(none)"), after.get(path, "(none)")
        if old != new:
            lines.append(f"{path}: sent {json.dumps(old)}, would send {json.dumps(new)}")
    return lines


def _step_json(step: ReplayedStep) -> dict[str, Any]:
    data = asdict(step)
    return {"step": data.pop("step_id"), **data}


def _print_replay(found: Replay, run: RunRecord) -> None:
    console = terminal()
    head = "DIFFERS" if found.differs else "same"
    console.print(
        f"run [bold]{found.run_id}[/] of {escape(found.recipe)!r} (version "
        f"{short(run.version)}): [bold]{head}[/]"
    )
    if found.problem is not None:
        console.print(f"  not replayed: {escape(found.problem)}")
        return
    for step in found.steps:
        if not step.writes:
            continue
        was = "" if step.matched in (None, step.step_id) else f" (was {step.matched})"
        console.print(f"  {escape(step.step_id + was)}  {escape(step.use)}  {step.verdict}")
        if step.verdict == "differs":
            for line in differences(step.sent, step.would_send):
                console.print(f"    {escape(line)}")
        elif step.verdict in ("new", "dropped") or step.note:
            sent = json.dumps(step.sent) if step.sent is not None else "nothing"
            would = json.dumps(step.would_send) if step.would_send is not None else "nothing"
            console.print(f"    sent {escape(sent)}")
            console.print(f"    would send {escape(would)}")
            if step.note:
                console.print(f"    {escape(step.note)}")


@click.command("replay")
@click.argument("run_id", required=False)
@click.option(
    "--recipe", "recipe_path", required=True, type=click.Path(exists=True, dir_okay=False),
    help="The recipe version to replay under."
)  # fmt: skip
@click.option("--since", help="Replay every run since (30d, or an ISO time).")
@click.option("--recipe-name", help="Whose runs to replay (default: the recipe's name).")
@click.option("--limit", default=1000, show_default=True, type=click.IntRange(1, 1_000_000))
@state_option
@modules_option
@json_option
def replay_command(
    run_id: str | None,
    recipe_path: str,
    since: str | None,
    recipe_name: str | None,
    limit: int,
    state: str | None,
    modules_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Replay recorded runs under another recipe version and send nothing: reads come from
    each run's journal, writes are rendered and compared with what the run sent. Exits 1
    when a write of the new version differs.

    \b
    Examples:
      practiceflow replay 5f0c... --recipe recipes/proposal_to_bill_and_eform.yaml
      practiceflow replay --recipe recipes/proposal_to_bill_and_eform.yaml --since 30d
      practiceflow replay --recipe recipes/proposal_to_bill_and_eform.yaml \\
          --recipe-name "accepted proposal -> first bill" --json
    """
    recipe = validate_recipe(recipe_path, registry=load_modules(list(modules_dirs)))
    with open_state(state) as store:
        if run_id is not None:
            runs = [run_or_fail(store, run_id)]
        else:
            runs = store.list_runs(
                recipe=recipe_name or recipe.name,
                since=parse_since(since, store.now()) if since else None,
                limit=limit,
            )
            runs = [run for run in reversed(runs) if isinstance(run.origin, dict)]
        found = [replay(store, run, recipe) for run in runs]
    differ = [one for one in found if one.differs or one.problem is not None]
    if as_json:
        rows = [
            {"run": one.run_id, "recipe": one.recipe, "differs": one.differs,
             "problem": one.problem, "steps": [_step_json(step) for step in one.steps]}
            for one in found
        ]  # fmt: skip
        echo_json(rows)
    else:
        for one, run in zip(found, runs, strict=True):
            _print_replay(one, run)
        click.echo(f"{len(found)} runs replayed, {len(differ)} would write otherwise; 0 sent")
    click.get_current_context().exit(1 if differ else 0)


def _check_json(check: RunCheck) -> dict[str, Any]:
    return {
        "run": check.run.run_id,
        "status": check.run.status,
        "version": check.run.version,
        "decision": check.decision,
        "step": check.step,
        "reason": check.reason,
    }


@click.command("check")
@click.argument("recipe_path", metavar="RECIPE", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--migrate", "do_migrate", is_flag=True, help="Move the runs that can move to this version."
)
@click.option("--recipe-name", help="Whose runs to check (default: the recipe's name).")
@click.option("--evidence", default="7d", show_default=True, help="Replay runs this recent too.")
@state_option
@modules_option
@json_option
def check(
    recipe_path: str,
    do_migrate: bool,
    recipe_name: str | None,
    evidence: str,
    state: str | None,
    modules_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Check a new version of a recipe against every run in flight: each can move to it,
    must finish on its own version, or needs a person (with the step and the reason).
    Finished runs as recent as --evidence are replayed too. Nothing is sent; with
    --migrate, the runs that can move are moved (a step a run did is never sent again).

    \b
    Examples:
      practiceflow recipes check recipes/proposal_to_bill_and_eform.yaml
      practiceflow recipes check recipes/proposal_to_bill_and_eform.yaml --evidence 30d
      practiceflow recipes check recipes/proposal_to_bill_and_eform.yaml --migrate
    """
    recipe = validate_recipe(recipe_path, registry=load_modules(list(modules_dirs)))
    version = recipe_version(recipe)
    digest = version.digest if version is not None else None
    name = recipe_name or recipe.name
    with open_state(state) as store:
        checks = check_runs(store, in_flight(store, name), recipe, digest)
        since = parse_since(evidence, store.now())
        recent = [
            run
            for run in store.list_runs(recipe=name, since=since, limit=1000)
            if run.status in ("succeeded", "failed") and isinstance(run.origin, dict)
        ]
        differ = sum(replay(store, run, recipe).differs for run in recent)
        moved = migrate(store, checks, version) if do_migrate and version is not None else []
    people = [one for one in checks if one.decision == "needs a person"]
    if as_json:
        data = {
            "version": digest,
            "runs": [_check_json(one) for one in checks],
            "evidence": {"replayed": len(recent), "differ": differ},
            "moved": moved,
        }
        click.echo(json.dumps(data, indent=2))
    else:
        console = terminal()
        console.print(f"version {short(digest)}: {len(checks)} runs in flight")
        for one in checks:
            at = f" at {one.step}" if one.step else ""
            console.print(
                f"  {one.run.run_id}  {one.run.status:<9} {short(one.run.version)}  "
                f"[bold]{one.decision}[/]{escape(at)}: {escape(one.reason)}"
            )
        replayed = f"{len(recent)} recent runs replayed, {differ} would write otherwise"
        console.print(f"evidence: {replayed}")
        if do_migrate:
            console.print(f"moved {len(moved)} runs to version {short(digest)}")
        elif any(one.decision == "can move" for one in checks):
            console.print("run again with --migrate to move the runs that can move")
    click.get_current_context().exit(1 if people else 0)


@click.command("recipe")
@click.argument("run_id")
@click.option("--module", "module_key", help="Print this module's text instead.")
@state_option
def run_recipe(run_id: str, module_key: str | None, state: str | None) -> None:
    """Print the recipe a run runs on, as its version stored it (whatever the file says
    now), or one of that version's modules.

    \b
    Examples:
      practiceflow runs recipe 5f0c...
      practiceflow runs recipe 5f0c... --module create_bill
    """
    with open_state(state) as store:
        record = run_or_fail(store, run_id)
        if record.version is None:
            message = f"run {record.run_id}: it started before versions were recorded"
            raise ConfigError(message)
        version = load_version(store, record.version)
    if module_key is None:
        click.echo(f"# version {short(record.version)} of {version.file}", err=True)
        click.echo(version.text, nl=False)
        return
    found = [module for module in version.modules.values() if module.key == module_key]
    if not found:
        known = sorted(module.key for module in version.modules.values())
        message = f"--module: got {module_key!r}; the version's modules are {known}"
        raise ConfigError(message)
    click.echo(f"# {found[0].kind} {found[0].key} from {found[0].source}", err=True)
    click.echo(found[0].text, nl=False)


COMMANDS: list[click.Command] = [replay_command]
