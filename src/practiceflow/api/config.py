"""Where the client's settings come from: arguments > environment > profile file (TOML,
``~/.config/practiceflow/profiles.toml`` or ``PRACTICEFLOW_PROFILES``; the README's
configuration table names each variable and key). The spec names regions but not their
hosts, so a region's base URL is configuration (:func:`_pick_base_url` says which wins).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, get_args
from urllib.parse import urlsplit

from practiceflow.api.auth_methods import Secret
from practiceflow.errors import ConfigError
from practiceflow.manifest.safe_read import FileRefused, read_text_limited

Region = Literal["anz", "uk", "za"]
AuthMethodName = Literal["header", "basic"]

#: The regions of the spec (section 1), each tied to its own base URL.
REGIONS: Final[tuple[Region, ...]] = get_args(Region)
#: The two authentication methods of the spec (section 5).
AUTH_METHODS: Final[tuple[AuthMethodName, ...]] = get_args(AuthMethodName)
#: Keys a profile table may hold.
PROFILE_KEYS: Final = ("client_id", "client_secret", "region", "base_url", "auth_method")
ENV_PREFIX: Final = "PRACTICEFLOW_"
DEFAULT_PROFILES_PATH: Final = Path("~/.config/practiceflow/profiles.toml")

#: A profile file is a few lines of TOML; anything larger is refused unread.
#: A fleet of 100,000 practices keeps their credentials in one file of about 15 MB.
_MAX_PROFILE_BYTES = 50_000_000


@dataclass(frozen=True)
class Settings:
    """The resolved configuration of one client; safe to print (the secret is masked). The
    base URL has no trailing slash; ``region`` is None when only a base URL was given;
    ``profile`` is the profile table read, if any; ``sources`` says where each setting came
    from, e.g. ``{"client_id": "environment PRACTICEFLOW_CLIENT_ID"}``."""

    client_id: str
    client_secret: Secret
    base_url: str
    region: Region | None = None
    auth_method: AuthMethodName = "header"
    profile: str | None = None
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)


def profiles_path(environ: Mapping[str, str] | None = None) -> Path:
    """The profile file to read (``PRACTICEFLOW_PROFILES`` or the default), ``~`` expanded."""
    env = os.environ if environ is None else environ
    raw = env.get(f"{ENV_PREFIX}PROFILES") or str(DEFAULT_PROFILES_PATH)
    return Path(raw).expanduser()


def normalise_base_url(value: str, *, source: str = "base URL") -> str:
    """A checked base URL without a trailing slash; plain ``http`` only for a loopback host
    (the credentials travel in every request). ConfigError names ``source``."""
    parts = urlsplit(value.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        message = (
            f"{source}: got {value!r}; expected an absolute URL such as "
            "'https://host/' or 'http://127.0.0.1:8000/anz'"
        )
        raise ConfigError(message)
    if parts.query or parts.fragment:
        message = f"{source}: got {value!r}; a base URL has no query string or fragment"
        raise ConfigError(message)
    if parts.scheme.lower() == "http" and not _is_loopback(parts.hostname):
        message = (
            f"{source}: got {value!r}; plain http is allowed only for a loopback host "
            "(127.0.0.1, ::1, localhost); the API is served over https"
        )
        raise ConfigError(message)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=4)
def _parsed_profiles(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    """The profile file parsed once per version (``mtime_ns``, ``size``), not once per
    practice of a fleet. Callers copy what they keep."""
    del mtime_ns, size  # the cache's key only
    try:
        return tomllib.loads(read_text_limited(Path(path), _MAX_PROFILE_BYTES))
    # tomllib recurses into nested arrays and inline tables: absurd nesting is an error too.
    except (FileRefused, tomllib.TOMLDecodeError, RecursionError) as exc:
        message = f"{path}: cannot read the profile file: {exc}"
        raise ConfigError(message) from None


def _read_profile(
    path: Path, name: str | None, *, explicit: bool
) -> tuple[str | None, dict[str, Any]]:
    """Return (profile name, table) or (None, {}) when there is nothing to read."""
    if not path.is_file():
        if explicit:
            message = (
                f"profile {name!r}: the profile file {path} does not exist; create it or "
                f"point {ENV_PREFIX}PROFILES at one"
            )
            raise ConfigError(message)
        return None, {}
    stat = path.stat()
    document = _parsed_profiles(str(path), stat.st_mtime_ns, stat.st_size)
    chosen = name or "default"
    table = document.get(chosen)
    if table is None:
        if not explicit:
            return None, {}
        names = ", ".join(sorted(k for k, v in document.items() if isinstance(v, dict)))
        message = f"{path}: no profile [{chosen}]; profiles in the file are: {names or '(none)'}"
        raise ConfigError(message)
    if not isinstance(table, dict):
        message = f"{path}: [{chosen}] is a {type(table).__name__}; expected a table of keys"
        raise ConfigError(message)
    for key, value in table.items():
        if key not in PROFILE_KEYS:
            message = (
                f"{path} [{chosen}]: unknown key {key!r}; valid keys are {', '.join(PROFILE_KEYS)}"
            )
            raise ConfigError(message)
        if not isinstance(value, str):
            message = (
                f"{path} [{chosen}].{key}: got {type(value).__name__} {value!r}; expected a string"
            )
            raise ConfigError(message)
    return chosen, dict(table)


def _check_choice(value: str, source: str, valid: tuple[str, ...], what: str) -> Any:
    choice = value.strip().lower()
    if choice not in valid:
        message = f"{source}: got {value!r}; valid {what} are {', '.join(valid)}"
        raise ConfigError(message)
    return choice


def load_settings(
    client_id: str | None = None,
    client_secret: str | Secret | None = None,
    *,
    region: str | None = None,
    base_url: str | None = None,
    auth_method: str | None = None,
    profile: str | None = None,
    environ: Mapping[str, str] | None = None,
    profiles_file: str | os.PathLike[str] | None = None,
) -> Settings:
    """Resolve the client's settings: arguments > environment > profile file.

    Args:
        client_id: Client ID; else ``PRACTICEFLOW_CLIENT_ID``; else the profile's.
        client_secret: Client secret; else ``PRACTICEFLOW_CLIENT_SECRET``; else the profile's.
        region: ``anz``, ``uk`` or ``za``; else ``PRACTICEFLOW_REGION``; else the profile's.
        base_url: the regional base URL; else ``PRACTICEFLOW_BASE_URL``, else
            ``PRACTICEFLOW_BASE_URL_<REGION>``, else the profile's ``base_url``.
        auth_method: ``header`` or ``basic``; else ``PRACTICEFLOW_AUTH_METHOD``; else the
            profile's; else ``header``.
        profile: the profile table to read; else ``PRACTICEFLOW_PROFILE``; else ``default``
            (silently skipped when absent, unlike a profile named on purpose).
        environ: environment to read; ``os.environ`` when None (tests pass a dict).
        profiles_file: the profile file; else ``PRACTICEFLOW_PROFILES``; else
            ``~/.config/practiceflow/profiles.toml``.

    Returns:
        The resolved :class:`Settings`.

    Raises:
        ConfigError: a setting is missing or invalid; the message says where each can be set.
    """
    env = os.environ if environ is None else environ
    sources: dict[str, str] = {}

    profile_name = profile or env.get(f"{ENV_PREFIX}PROFILE") or None
    path = Path(profiles_file).expanduser() if profiles_file else profiles_path(env)
    used_profile, table = _read_profile(path, profile_name, explicit=profile_name is not None)
    profile_label = f"profile [{used_profile}] in {path}"

    def pick(name: str, argument: str | None) -> tuple[str | None, str]:
        if argument is not None and argument != "":
            return argument, "argument"
        env_name = f"{ENV_PREFIX}{name.upper()}"
        if env.get(env_name):
            return env[env_name], f"environment {env_name}"
        if table.get(name):
            return str(table[name]), f"{profile_label} key {name}"
        return None, ""

    raw_id, sources["client_id"] = pick("client_id", client_id)
    secret_arg = client_secret.reveal() if isinstance(client_secret, Secret) else client_secret
    raw_secret, sources["client_secret"] = pick("client_secret", secret_arg)
    raw_region, sources["region"] = pick("region", region)
    raw_method, sources["auth_method"] = pick("auth_method", auth_method)

    resolved_region: Region | None = None
    if raw_region:
        resolved_region = _check_choice(raw_region, sources["region"], REGIONS, "regions")
    method: AuthMethodName = "header"
    if raw_method:
        method = _check_choice(raw_method, sources["auth_method"], AUTH_METHODS, "auth methods")
    else:
        sources["auth_method"] = "default"

    resolved_url, url_source, skipped = _pick_base_url(
        base_url, env, table, profile_label, resolved_region, region_argument=bool(region)
    )
    if resolved_url is None:
        raise ConfigError(_missing_base_url_message(resolved_region, path, skipped))
    sources["base_url"] = url_source
    final_url = normalise_base_url(resolved_url, source=url_source)

    labels = {"client_id": ("Client ID", raw_id), "client_secret": ("Client secret", raw_secret)}
    missing = {key: label for key, (label, value) in labels.items() if not value}
    if missing:
        how = "; ".join(
            f"{label}: pass it, set {ENV_PREFIX}{key.upper()}, or put {key} in a profile of {path}"
            for key, label in missing.items()
        )
        message = f"no {' and '.join(missing.values())} configured ({how})"
        raise ConfigError(message)
    return Settings(
        client_id=(raw_id or "").strip(),
        client_secret=Secret(raw_secret or ""),
        base_url=final_url,
        region=resolved_region,
        auth_method=method,
        profile=used_profile,
        sources={k: v for k, v in sources.items() if v},
    )


def _pick_base_url(
    argument: str | None,
    env: Mapping[str, str],
    table: Mapping[str, Any],
    profile_label: str,
    region: Region | None,
    *,
    region_argument: bool = False,
) -> tuple[str | None, str, list[str]]:
    """(url, source, candidates skipped): the first of the argument, ``PRACTICEFLOW_BASE_URL``,
    ``..._BASE_URL_<REGION>`` and the profile's ``base_url`` wins; a generic URL belongs to the
    region set beside it (to none, when the region is an argument): another region's host
    would only answer 401."""
    skipped: list[str] = []
    if argument:
        return argument, "argument base_url", skipped

    def fits(own: str | None) -> bool:
        if region is None:
            return True
        return own == region if own is not None or region_argument else True

    generic = f"{ENV_PREFIX}BASE_URL"
    if env.get(generic):
        env_region = (env.get(f"{ENV_PREFIX}REGION") or "").strip().lower() or None
        if fits(env_region):
            return env[generic], f"environment {generic}", skipped
        skipped.append(f"{generic} (set for region {env_region or 'unnamed'})")
    if region is not None:
        per_region = f"{ENV_PREFIX}BASE_URL_{region.upper()}"
        if env.get(per_region):
            return env[per_region], f"environment {per_region}", skipped
    if table.get("base_url"):
        table_region = str(table.get("region") or "").strip().lower() or None
        if fits(table_region):
            return str(table["base_url"]), f"{profile_label} key base_url", skipped
        skipped.append(f"{profile_label} base_url (set for region {table_region or 'unnamed'})")
    return None, "", skipped


def _missing_base_url_message(region: Region | None, path: Path, skipped: list[str]) -> str:
    if region is None:
        message = (
            "no base URL configured: choose a region (anz, uk, za) with its base URL in "
            f"{ENV_PREFIX}BASE_URL_ANZ / _UK / _ZA, or give one with --base-url / "
            f"{ENV_PREFIX}BASE_URL, or put base_url in a profile of {path}"
        )
    else:
        message = (
            f"region {region!r} has no base URL configured (practiceflow ships no host "
            f"names): set {ENV_PREFIX}BASE_URL_{region.upper()}, or give one with "
            f"--base-url / {ENV_PREFIX}BASE_URL, or put base_url in a profile of {path}"
        )
    if skipped:
        message += (
            "; skipped because they belong to another region (or to none named): "
            + ", ".join(skipped)
        )
    return message
