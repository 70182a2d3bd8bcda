"""Settings come from arguments > environment > profile file, and say how to fix gaps."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from practiceflow.api import Client, Secret, Settings, load_settings
from practiceflow.errors import ConfigError

from .conftest import SECRET

PROFILES = """
[default]
client_id = "profile-id"
client_secret = "profile-secret"
region = "anz"
base_url = "https://profile.test/anz"

[uk]
client_id = "uk-id"
client_secret = "uk-secret"
region = "uk"
base_url = "https://profile.test/uk"
auth_method = "basic"
"""


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    path = tmp_path / "profiles.toml"
    path.write_text(PROFILES, encoding="utf-8")
    return path


FULL_ENV = {
    "PRACTICEFLOW_CLIENT_ID": "env-id",
    "PRACTICEFLOW_CLIENT_SECRET": "env-secret",
    "PRACTICEFLOW_REGION": "anz",
    "PRACTICEFLOW_BASE_URL": "https://env.test/anz",
}


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        pytest.param(
            {},
            {},
            {"client_id": "profile-id", "base_url": "https://profile.test/anz", "region": "anz"},
            id="profile-only",
        ),
        pytest.param(
            {},
            FULL_ENV,
            {"client_id": "env-id", "base_url": "https://env.test/anz", "region": "anz"},
            id="env-over-profile",
        ),
        pytest.param(
            {"client_id": "arg-id", "base_url": "https://arg.test/x/"},
            FULL_ENV,
            {"client_id": "arg-id", "base_url": "https://arg.test/x", "region": "anz"},
            id="args-over-env",
        ),
        pytest.param(
            {"profile": "uk"},
            {},
            {
                "client_id": "uk-id",
                "base_url": "https://profile.test/uk",
                "region": "uk",
                "auth_method": "basic",
            },
            id="named-profile",
        ),
        pytest.param(
            {},
            {"PRACTICEFLOW_PROFILE": "uk", "PRACTICEFLOW_AUTH_METHOD": "header"},
            {"client_id": "uk-id", "auth_method": "header"},
            id="profile-from-env-method-from-env",
        ),
        pytest.param(
            {"region": "za"},
            {"PRACTICEFLOW_BASE_URL_ZA": "https://za.test/"},
            {"region": "za", "base_url": "https://za.test"},
            id="per-region-env-url",
        ),
        pytest.param(
            {"region": "UK"},
            {"PRACTICEFLOW_BASE_URL_UK": "https://uk.test", "PRACTICEFLOW_BASE_URL_ANZ": "x"},
            {"region": "uk", "base_url": "https://uk.test"},
            id="region-case-insensitive",
        ),
        pytest.param(
            {"base_url": "http://127.0.0.1:8123/anz"},
            {},
            {"base_url": "http://127.0.0.1:8123/anz"},
            id="sandbox-http-loopback",
        ),
    ],
)
def test_settings_follow_documented_precedence(
    profiles: Path, args: dict[str, Any], env: dict[str, str], expected: dict[str, Any]
) -> None:
    settings = load_settings(environ=env, profiles_file=profiles, **args)
    for name, value in expected.items():
        assert getattr(settings, name) == value, name


def test_secret_precedence_and_sources(profiles: Path) -> None:
    env = {"PRACTICEFLOW_CLIENT_SECRET": "env-secret"}
    settings = load_settings(environ=env, profiles_file=profiles)
    assert settings.client_secret == Secret("env-secret")
    assert settings.sources["client_secret"] == "environment PRACTICEFLOW_CLIENT_SECRET"
    assert settings.sources["client_id"].startswith("profile [default]")
    settings = load_settings(client_secret="arg-secret", environ=env, profiles_file=profiles)
    assert settings.client_secret.reveal() == "arg-secret"


def test_profiles_file_from_env_variable(profiles: Path) -> None:
    settings = load_settings(environ={"PRACTICEFLOW_PROFILES": str(profiles)})
    assert settings.profile == "default"
    assert settings.client_id == "profile-id"


def test_region_argument_skips_a_profile_url_of_another_region(profiles: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(region="za", environ={}, profiles_file=profiles)
    text = str(info.value)
    assert "PRACTICEFLOW_BASE_URL_ZA" in text
    assert "belong to another region" in text


def test_region_argument_skips_a_generic_env_url_of_another_region() -> None:
    env = {
        "PRACTICEFLOW_REGION": "anz",
        "PRACTICEFLOW_BASE_URL": "https://anz.test",
        "PRACTICEFLOW_BASE_URL_UK": "https://uk.test",
    }
    settings = load_settings("id", "secret", region="uk", environ=env)
    assert settings.base_url == "https://uk.test"


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        pytest.param({}, {}, "no base URL configured", id="nothing"),
        pytest.param({"region": "uk"}, {}, "PRACTICEFLOW_BASE_URL_UK", id="region-without-url"),
        pytest.param(
            {"region": "au"}, {}, "got 'au'; valid regions are anz, uk, za", id="bad-region"
        ),
        pytest.param(
            {"base_url": "https://x.test"}, {}, "no Client ID and Client secret", id="no-creds"
        ),
        pytest.param(
            {"base_url": "https://x.test", "client_id": "id"},
            {},
            "PRACTICEFLOW_CLIENT_SECRET",
            id="no-secret",
        ),
        pytest.param(
            {"base_url": "http://api.example.com", "client_id": "i", "client_secret": "s"},
            {},
            "plain http is allowed only for a loopback host",
            id="http-remote",
        ),
        pytest.param(
            {"base_url": "ftp://x", "client_id": "i", "client_secret": "s"},
            {},
            "expected an absolute URL",
            id="bad-scheme",
        ),
        pytest.param(
            {"base_url": "https://x.test/?a=1", "client_id": "i", "client_secret": "s"},
            {},
            "no query string",
            id="url-query",
        ),
        pytest.param(
            {"base_url": "https://x.test", "client_id": "i", "client_secret": "s"},
            {"PRACTICEFLOW_AUTH_METHOD": "oauth"},
            "valid auth methods are header, basic",
            id="bad-auth-method",
        ),
        pytest.param({"profile": "missing"}, {}, "does not exist", id="named-profile-no-file"),
    ],
)
def test_bad_or_missing_settings_say_how_to_fix_them(
    args: dict[str, Any], env: dict[str, str], needle: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(environ=env, profiles_file=tmp_path / "none.toml", **args)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        pytest.param("[default]\nclient_idd = 'x'\n", "unknown key 'client_idd'", id="unknown-key"),
        pytest.param("[default]\nclient_id = 5\n", "expected a string", id="not-string"),
        pytest.param("[default\n", "cannot read the profile file", id="bad-toml"),
        pytest.param("default = 3\n", "expected a table", id="not-table"),
    ],
)
def test_broken_profile_files_are_reported_with_their_path(
    tmp_path: Path, content: str, needle: str
) -> None:
    path = tmp_path / "p.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(environ={}, profiles_file=path)
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_unknown_named_profile_lists_the_ones_there(profiles: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"no profile \[acme\]; profiles in the file are: default, uk"
    ):
        load_settings(profile="acme", environ={}, profiles_file=profiles)


def test_client_reads_environment_and_profile(
    monkeypatch: pytest.MonkeyPatch, profiles: Path
) -> None:
    monkeypatch.setenv("PRACTICEFLOW_PROFILES", str(profiles))
    monkeypatch.setenv("PRACTICEFLOW_CLIENT_ID", "env-id")
    with Client() as client:
        assert client.settings.client_id == "env-id"
        assert client.base_url == "https://profile.test/anz"
        assert client.settings.auth_method == "header"


def test_settings_and_client_repr_never_show_the_secret() -> None:
    settings = load_settings("id", SECRET, base_url="https://x.test", environ={})
    with Client(settings=settings) as client:
        for text in (repr(settings), str(settings), repr(client), str(client), repr(client._auth)):
            assert SECRET not in text
        assert "***" in repr(settings)
    assert isinstance(settings, Settings)


def test_secret_wrapper_masks_and_compares() -> None:
    secret = Secret(SECRET)
    assert repr(secret) == "Secret('***')"
    assert str(secret) == f"{secret}" == "***"
    assert secret == Secret(SECRET)
    assert secret != Secret("other")
    assert secret.reveal() == SECRET
    with pytest.raises(TypeError):
        pickle.dumps(secret)
