"""Listen addresses read the same way wherever a person gives one."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from practiceflow.cli.runs import serve
from practiceflow.cli.worker import worker
from practiceflow.errors import ConfigError
from practiceflow.service.intake import listen_address
from practiceflow.service.netaddr import parse_listen


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:8080", ("127.0.0.1", 8080)),
        ("0.0.0.0:0", ("0.0.0.0", 0)),  # noqa: S104 - a value under test, nothing binds
        ("8470", ("127.0.0.1", 8470)),
        ("[::1]:9000", ("::1", 9000)),
        (":7000", ("127.0.0.1", 7000)),
    ],
)
def test_valid_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text, option="--listen", example="x") == expected


@pytest.mark.parametrize("text", ["", "host", "host:port", "127.0.0.1:65536", "1:-1"])
def test_a_bad_address_names_the_option_the_value_and_an_example(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_listen(text, option="--listen", example="127.0.0.1:8080")
    assert str(caught.value) == (
        f"--listen: got {text!r}; expected HOST:PORT or PORT, such as 127.0.0.1:8080"
    )


_RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "proposal_to_bill_and_eform.yaml"
_WORKER = ["--fleet", "fleet.yaml", "--state", "postgresql://127.0.0.1:1/pf"]


@pytest.mark.parametrize(
    ("command", "args", "option"),
    [
        (worker, [*_WORKER, "--listen", "x", "--public-url", "https://hooks.example"], "--listen"),
        (worker, [*_WORKER, "--ops-listen", "x"], "--ops-listen"),
        (serve, [str(_RECIPE), "--console-listen", "x"], "--console-listen"),
    ],
)
def test_each_command_names_its_own_option(
    command: click.Command, args: list[str], option: str
) -> None:
    result = CliRunner().invoke(command, args)
    assert isinstance(result.exception, ConfigError)
    assert str(result.exception).startswith(f"{option}: got 'x'; expected HOST:PORT")


def test_the_receiver_variable_is_named_in_its_error() -> None:
    with pytest.raises(ConfigError, match=r"^PRACTICEFLOW_LISTEN: got 'x'"):
        listen_address("x")
    assert listen_address(None) == ("127.0.0.1", 0)
    assert listen_address("9001") == ("127.0.0.1", 9001)
