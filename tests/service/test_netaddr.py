"""Listen addresses read the same way wherever a person gives one."""

from __future__ import annotations

import pytest

from practiceflow.console.server import parse_listen as console_listen
from practiceflow.errors import ConfigError
from practiceflow.fleet.webhook_intake import parse_listen as worker_listen
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


def test_each_caller_names_its_own_option() -> None:
    with pytest.raises(ConfigError, match=r"^PRACTICEFLOW_LISTEN: got 'x'"):
        listen_address("x")
    with pytest.raises(ConfigError, match=r"^--listen: got 'x'"):
        worker_listen("x")
    with pytest.raises(ConfigError, match=r"^--console-listen: got 'x'"):
        console_listen("x")
    assert listen_address(None) == ("127.0.0.1", 0)
    assert listen_address("9001") == ("127.0.0.1", 9001)
