"""``make demo`` (interim): the sandbox, the CLI and the typed client, end to end.

This interim demo starts the sandbox on a free port of 127.0.0.1, runs
``practiceflow auth check`` against it as a user would (a real subprocess), then uses the
typed client to list clients and the sandbox's own records. The recipe demo of the runner
issue replaces it.
"""

from __future__ import annotations

import os
import subprocess
import sys

from rich.console import Console
from rich.table import Table

from practiceflow.api import Client
from practiceflow.testing import running_sandbox

__all__ = ["main"]


def main() -> int:
    """Run the demo; returns the process exit code."""
    console = Console()
    console.rule("practiceflow demo (interim: sandbox + CLI + client)")
    with running_sandbox(seed=1) as sandbox:
        client_id, secret = sandbox.credentials("anz", "rw")
        console.print(f"sandbox on {sandbox.url} (regions /anz /uk /za)")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")},
            "PRACTICEFLOW_CLIENT_ID": client_id,
            "PRACTICEFLOW_CLIENT_SECRET": secret,
            "PRACTICEFLOW_BASE_URL": sandbox.base_url("anz"),
        }
        command = [sys.executable, "-m", "practiceflow", "auth", "check"]
        console.print("$ practiceflow auth check")
        done = subprocess.run(command, env=env, check=False)  # noqa: S603 - our own CLI
        if done.returncode != 0:
            return done.returncode
        with Client(client_id, secret, base_url=sandbox.base_url("anz")) as client:
            table = Table(title="first clients of the practice (GET /api/v1/entities)")
            for column in ("entityKey", "entityName", "entityType", "status"):
                table.add_column(column)
            for row in client.paginate("/api/v1/entities", limit=5):
                table.add_row(
                    *(
                        str(row.get(c, ""))
                        for c in ("entityKey", "entityName", "entityType", "status")
                    )
                )
            console.print(table)
    console.print("the sandbox stopped; no process is left behind")
    return 0


if __name__ == "__main__":
    sys.exit(main())
