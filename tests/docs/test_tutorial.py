"""docs/tutorial.md, walked as a newcomer would: every command, every file, in order.

The tutorial's ``sh`` blocks are run line by line in a fresh folder (``export`` sets the
environment, a trailing ``&`` starts a background job, a process of its own, ``kill %N``
stops the Nth; a command in the foreground runs through the CLI in this process); a YAML
block under ``<!-- file: PATH -->`` is written to PATH. The only liberty taken: the
sandbox's port 8765 and the receiver's port 8080 become free ports, so that the test can
run beside anything else. The ``text`` blocks that show output are checked against what
the commands really print.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner, Result

from practiceflow.cli import cli

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "tutorial.md"
#: Generous: only a broken run would wait this long.
WAIT = 120.0


@dataclass
class Block:
    """A fenced block of the tutorial: its language, text and the file it names."""

    lang: str
    text: str
    file: str | None = None


def blocks(markdown: str) -> list[Block]:
    found: list[Block] = []
    pattern = re.compile(
        r"(?:<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S
    )
    for match in pattern.finditer(markdown):
        found.append(Block(match["lang"], match["body"], match["file"]))
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Job:
    """A background command and what it printed so far."""

    process: subprocess.Popen[str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    seen: list[str] = field(default_factory=list)

    def start_pump(self) -> None:
        def pump() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.lines.put(line)

        threading.Thread(target=pump, daemon=True).start()

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + WAIT
        while not any(text in line for line in self.seen):
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} not printed; got:\n{''.join(self.seen)}"
            try:
                self.seen.append(self.lines.get(timeout=left))
            except queue.Empty:
                continue
        return "".join(self.seen)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=WAIT)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code


class Shell:
    """Runs the tutorial's commands the way a shell would, in one folder."""

    def __init__(self, folder: Path, ports: dict[str, str]) -> None:
        self.folder = folder
        self.ports = ports
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PRACTICEFLOW_")}
        self.env["PRACTICEFLOW_PROFILES"] = str(folder / "no-profiles.toml")
        self.jobs: list[Job] = []
        self.outputs: dict[str, str] = {}

    def local(self, text: str) -> str:
        for old, new in self.ports.items():
            text = text.replace(old, new)
        return text

    def run(self, line: str) -> None:
        line = self.local(line)
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            self.env[name] = value
            return
        if line.startswith("kill %"):
            job = self.jobs[int(line.removeprefix("kill %")) - 1]
            # a clean stop; uvicorn re-raises the SIGTERM it handled once it has shut down
            assert job.stop() in (0, -signal.SIGTERM), "".join(job.seen)
            return
        words = shlex.split(line.removesuffix("&"))
        assert words[0] == "practiceflow", line
        command = [sys.executable, "-m", "practiceflow", *words[1:]]
        if line.endswith("&"):
            process = subprocess.Popen(  # noqa: S603 - our own interpreter
                command,
                cwd=self.folder,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            job = Job(process)
            job.start_pump()
            self.jobs.append(job)
            self.outputs[words[1]] = job.wait_for(READY[words[1]])
            return
        if words[1:3] == ["runs", "list"]:
            self.wait_for_run()
        done = self.invoke(words[1:])
        assert done.exit_code == 0, f"{line}\n{done.output}\n{done.exception!r}"
        self.outputs[" ".join(words[1:])] = done.stdout
        self.outputs[" ".join(words[1:3])] = done.stdout + done.stderr

    def invoke(self, args: list[str]) -> Result:
        """``practiceflow ARGS`` in the folder with the shell's environment, in this process
        (the CLI's own entry; a process start of its own would add only time)."""
        env: dict[str, str | None] = dict.fromkeys(os.environ)  # only the shell's variables
        env.update(self.env)
        before = Path.cwd()
        os.chdir(self.folder)
        try:
            return CliRunner().invoke(cli, args, env=env)
        finally:
            os.chdir(before)

    def wait_for_run(self) -> None:
        """The event arrives asynchronously: wait (generously) for its run to end."""
        deadline = time.monotonic() + WAIT
        while True:
            done = self.invoke(["runs", "list", "--json"])
            runs = json.loads(done.stdout) if done.exit_code == 0 and done.stdout else []
            if runs and runs[0]["status"] not in ("pending", "running"):
                return
            assert time.monotonic() < deadline, "the run did not end"
            time.sleep(0.5)

    def stop_all(self) -> None:
        for job in reversed(self.jobs):
            if job.process.poll() is None:
                job.process.kill()
                job.process.wait(timeout=WAIT)


#: What a background command prints once it is ready for the next command.
READY = {"sandbox": "Ctrl-C stops it", "serve": "subscribed proposal.accepted"}


def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    sandbox_port, receiver_port = _free_port(), _free_port()
    ports = {"8765": str(sandbox_port), "8080": str(receiver_port)}
    shell = Shell(tmp_path, ports)
    found = blocks(TUTORIAL.read_text(encoding="utf-8"))
    commands = 0
    try:
        for block in found:
            if block.file is not None:
                path = tmp_path / block.file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.text, encoding="utf-8")
            elif block.lang == "sh":
                for line in block.text.splitlines():
                    if line.strip() and not line.startswith("#"):
                        shell.run(line.strip())
                        commands += 1
        # what the text blocks say was printed, was
        printed = [block.text for block in found if block.lang == "text"]
        sandbox_said, serve_said = shell.outputs["sandbox"], shell.outputs["serve"]
        for line in shell.local(printed[0]).splitlines():
            assert line.strip() in sandbox_said
        for line in shell.local(printed[1]).splitlines():
            assert line.strip() in serve_said
    finally:
        shell.stop_all()
    assert commands >= 20
    # the newcomer's action and the three steps ran: one bill and two forms for the client
    fired = shell.outputs["sandbox fire proposal-accepted"]
    entity = fired.split("entityKey ", 1)[1].split(",", 1)[0]
    runs = shell.outputs["runs list"]
    assert "succeeded" in runs
    assert "4/4" in runs
    (bill,) = json.loads(shell.outputs["sandbox records bills --limit 1"])
    assert bill["entityKey"] == entity
    assert bill["billDetails"].startswith("Onboarding - ")
    assert bill["billAmount"] == 300
    forms = json.loads(shell.outputs["sandbox records eforms --limit 2"])
    assert sorted(form["templateId"] for form in forms) == [101, 108]
    assert {form["entityKey"] for form in forms} == {entity}
    deliveries = json.loads(shell.outputs["sandbox deliveries"])
    assert any(row.get("event") == "proposal.accepted" for row in deliveries), deliveries
