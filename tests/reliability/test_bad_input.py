"""Bad input, property-based (hypothesis): the recipe and module loaders, the webhook
receiver and the template sandbox. Every case ends in a :class:`PracticeflowError` (a
clear, located message) or a 4xx: never another exception, a hang or a stored event.

``max_examples`` is kept small (the suite runs on 2 cores in ``make test``); each test
also has a fixed table of the nastiest cases (billion laughs, deep nesting, huge files,
the classic Jinja escapes), which run every time.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import string
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from practiceflow.cli import cli
from practiceflow.errors import PracticeflowError
from practiceflow.manifest import load_module, load_recipe
from practiceflow.state import StateStore, open_store
from practiceflow.templating import compile_template
from practiceflow.triggers import Receiver
from practiceflow.triggers.webhook_receiver import serve_receiver

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

VALID_RECIPE: dict[str, Any] = {
    "name": "bad input",
    "trigger": {"use": "proposal_accepted", "mode": "webhook"},
    "steps": [
        {
            "id": "bill",
            "use": "create_bill",
            "with": {"entityKey": "{{ trigger.entityKey }}", "lineItems": []},
        }
    ],
}

BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
    f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n"
    for i in range(8)
)

NASTY_FILES = {
    "billion-laughs": BILLION_LAUGHS,
    "merge-key": "base: &b {name: x}\nrecipe:\n  <<: *b\n",
    "deep-flow-nesting": "[" * 50_000 + "]" * 50_000,
    "deep-block-nesting": "".join("  " * i + "a:\n" for i in range(3_000)) + "  " * 3_000 + "b",
    "huge-file": "name: " + "x" * 3_000_000 + "\n",
    "many-nodes": "steps: [" + ",".join(["1"] * 200_001) + "]\n",
    "python-tag": "name: !!python/object/apply:os.system ['true']\n",
    "binary-junk": "\x00\x01\x02\xff name: [",
    "not-a-mapping": "- 1\n- 2\n",
    "empty": "",
    "wrong-types": "name: 12\ntrigger: [1]\nsteps: {a: 1}\n",
    "json-bomb-string": json.dumps({"name": "a" * 1_000, "steps": [[[[[[[[]]]]]]]]}),
}


def _load_all_ways(path: Path) -> None:
    """Load a file as a recipe and as a module; only PracticeflowError may escape."""
    for load in (load_recipe, load_module):
        message = "loaded"
        try:
            load(path)
        except PracticeflowError as exc:
            message = str(exc)
        assert message  # a message the user can read
        assert "Traceback" not in message


@pytest.mark.parametrize("name", sorted(NASTY_FILES))
def test_nasty_files_end_in_a_clear_error(tmp_path: Path, name: str):
    path = tmp_path / "recipe.yaml"
    path.write_text(NASTY_FILES[name], encoding="utf-8", errors="surrogateescape")
    started = time.monotonic()
    with pytest.raises(PracticeflowError) as caught:
        load_recipe(path)
    assert str(path.name) in str(caught.value) or "recipe" in str(caught.value)
    _load_all_ways(path)
    assert time.monotonic() - started < 20  # no hang, no expansion


def _special_file(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "recipe.yaml"
    if kind == "symlink to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "symlink to /dev/urandom":
        path.symlink_to("/dev/urandom")
    elif kind == "fifo":  # opening it would block until a writer comes
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "dangling symlink":
        path.symlink_to(tmp_path / "nowhere.yaml")
    elif kind == "sparse 3 GB file":
        with path.open("wb") as stream:
            stream.truncate(3 * 1024**3)
    return path


SPECIAL_FILES = [
    "symlink to /dev/zero",
    "symlink to /dev/urandom",
    "fifo",
    "directory",
    "dangling symlink",
    "sparse 3 GB file",
]


@pytest.mark.parametrize("kind", SPECIAL_FILES)
def test_files_are_checked_before_they_are_read(tmp_path: Path, kind: str):
    path = _special_file(tmp_path, kind)
    for load in (load_recipe, load_module):
        with pytest.raises(PracticeflowError) as caught:
            load(path)
        text = str(caught.value)
        assert "recipe.yaml" in text
        assert "regular file" in text or "limit is" in text or "cannot read" in text


@pytest.mark.parametrize(
    "args",
    [
        ["run", "{path}", "--dry-run"],
        ["modules", "validate", "{path}"],
        ["action", "create_lead", "--input", "{path}", "--dry-run"],
    ],
)
@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "sparse 3 GB file"])
def test_the_cli_refuses_special_files_with_exit_2(tmp_path: Path, kind: str, args: list[str]):
    path = _special_file(tmp_path, kind)
    env = {name: None for name in os.environ if name.startswith("PRACTICEFLOW_")}
    env["PRACTICEFLOW_PROFILES"] = str(tmp_path / "none.toml")
    argv = [arg.replace("{path}", str(path)) for arg in args]
    result = CliRunner().invoke(cli, argv, env=env)
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output
    assert "recipe.yaml" in result.output
    assert "regular file" in result.output or "limit" in result.output


yaml_text = st.text(alphabet=string.printable + "éü€\t", max_size=400)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@SETTINGS
@given(text=yaml_text)
def test_random_text_never_escapes_as_a_traceback(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("y") / "random.yaml"
    path.write_text(text, encoding="utf-8")
    _load_all_ways(path)


@SETTINGS
@given(
    where=st.sampled_from(
        [
            ("name",),
            ("trigger",),
            ("trigger", "use"),
            ("trigger", "mode"),
            ("steps",),
            ("steps", 0),
            ("steps", 0, "id"),
            ("steps", 0, "use"),
            ("steps", 0, "with"),
            ("steps", 0, "with", "entityKey"),
            ("extra",),
        ]
    ),
    value=json_values,
)
def test_a_valid_recipe_with_one_field_of_any_type_loads_or_says_where(
    tmp_path_factory, where, value
):
    data = json.loads(json.dumps(VALID_RECIPE))
    target = data
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    path = tmp_path_factory.mktemp("r") / "recipe.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    _load_all_ways(path)


# ---- the webhook receiver ------------------------------------------------------------------

SECRET = "whsec-reliability-known"
TOKEN = "reliability-path-token-0123456789"


@pytest.fixture(scope="module")
def receiver(tmp_path_factory) -> Iterator[tuple[str, StateStore]]:
    store = open_store(str(tmp_path_factory.mktemp("recv") / "state.db"))
    store.save_subscription(
        "p",
        "any_webhook_event",
        "sub-1",
        "client.created",
        "http://x/hooks/" + TOKEN,
        SECRET,
        TOKEN,
        "active",
    )
    with serve_receiver(Receiver(store, max_body=64 * 1024)) as server:
        yield server.url + "/hooks/" + TOKEN, store
    store.close()


def _sign(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    with requests.Session() as session:
        session.trust_env = False
        response = session.post(url, data=body, headers=headers, timeout=10)
        return response.status_code


def _nothing_stored(store: StateStore) -> bool:
    return not store.pending_events("p", 10)


header_values = st.text(
    alphabet=string.ascii_letters + string.digits + "=-_.:;,/+ ", max_size=80
).map(str.strip)


@SETTINGS
@given(
    body=st.binary(max_size=2_000),
    headers=st.dictionaries(
        st.sampled_from(
            [
                "X-Svc-Event",
                "X-Svc-Event-Id",
                "X-Svc-Timestamp",
                "X-Svc-Signature",
                "Content-Type",
                "X-Other",
            ]
        ),
        header_values,
        max_size=6,
    ),
)
def test_random_headers_and_bodies_are_refused_with_a_4xx(receiver, body, headers):
    url, store = receiver
    status = _post(url, body, headers)
    assert 400 <= status < 500, status
    assert _nothing_stored(store)


@SETTINGS
@given(
    body=st.binary(min_size=1, max_size=500),
    # HMAC pads a short key with zero bytes: SECRET + '\x00' signs exactly as SECRET does.
    secret=st.text(min_size=1, max_size=30).filter(lambda s: s.rstrip("\x00") != SECRET),
    # Well outside the window: 300 s ahead (the header is whole seconds and the delivery
    # is checked a moment later, so 301 s ahead could land inside it), or further back than
    # the replay window (7 days less the tolerance: a late retry within it is accepted and
    # deduplicated). The exact edges are unit-tested in tests/test_webhooks.py.
    skew=st.sampled_from([0, 400, 10**9, -8 * 86_400, -(10**9)]),
)
def test_wrong_signatures_and_replayed_timestamps_are_refused(receiver, body, secret, skew):
    url, store = receiver
    timestamp = str(int(time.time()) + skew)
    base = {
        "X-Svc-Event": "client.created",
        "X-Svc-Event-Id": "evt-1",
        "X-Svc-Timestamp": timestamp,
        "Content-Type": "application/json",
    }
    # Signed with the wrong secret.
    assert _post(url, body, {**base, "X-Svc-Signature": _sign(secret, timestamp, body)}) == 401
    if skew:  # the right secret, but a timestamp outside the replay window
        good = _sign(SECRET, timestamp, body)
        assert _post(url, body, {**base, "X-Svc-Signature": good}) == 401
    assert _nothing_stored(store)


def test_oversize_bodies_are_refused_unread(receiver):
    url, store = receiver
    timestamp = str(int(time.time()))
    body = b'{"a":"' + b"x" * (65 * 1024) + b'"}'
    headers = {
        "X-Svc-Event": "client.created",
        "X-Svc-Event-Id": "big",
        "X-Svc-Timestamp": timestamp,
        "X-Svc-Signature": _sign(SECRET, timestamp, body),
    }
    assert _post(url, body, headers) == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
        for _ in range(100):
            yield b"x" * 1024

    with requests.Session() as session:
        session.trust_env = False
        response = session.post(url, data=chunks(), headers=headers, timeout=10)
    assert response.status_code == 413
    assert _nothing_stored(store)


# ---- the template sandbox -------------------------------------------------------------------

ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ ''.__class__ }}",
    "{{ trigger.__class__.__init__.__globals__ }}",
    "{{ cycler.__init__.__globals__.os }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "{{ joiner.__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ self._TemplateReference__context }}",
    "{{ config.items() }}",
    "{{ request.application.__globals__ }}",
    "{{ range(10**9) | list | length }}",
    "{{ 'x' * 10**9 }}",
    "{{ (trigger | attr('__class__')) }}",
    "{{ trigger['__class__'] }}",
    "{{ ().__class__.__base__.__subclasses__() }}",
    "{% for x in range(10**8) %}{% endfor %}",
    "{{ [].append.__self__ }}",
    "{{ '%s' % trigger.__init__ }}",
    "{{ '{0.__class__}'.format(trigger) }}",
]


@pytest.mark.parametrize("source", ESCAPES)
def test_template_escapes_are_refused(source):
    context = {"trigger": {"entityKey": "k"}, "steps": {}, "vars": {}}
    started = time.monotonic()
    with pytest.raises(PracticeflowError):
        compile_template(source).render(context)
    assert time.monotonic() - started < 10


@SETTINGS
@given(source=st.text(alphabet=string.printable, max_size=80).map(lambda s: "{{ " + s + " }}"))
def test_random_templates_render_or_refuse_cleanly(source):
    context = {"trigger": {"entityKey": "k"}, "steps": {}, "vars": {}}
    with contextlib.suppress(PracticeflowError):
        compile_template(source).render(context)


# ---- the corpus: hostile templates in recipes and modules, through the CLI ----------

HOSTILE_TEMPLATES = {
    "center": "{{ 'x'|center(2000000000) }}",
    "printf-width": "{{ '%2000000000s'|format(1) }}",
    "format-width": "{{ '{:>2000000000}'.format(1) }}",
    "indent": "{{ trigger.entityKey|indent(2000000000) }}",
    "join": "{{ range(100000)|join(' '*99999) }}",
    "replace": "{{ ('a'*99999)|replace('a','a'*99999) }}",
    "nested-loops": (
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    ),
    "recursive-macro": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(trigger.entityKey) }}",
    "constant-recursion": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "deep-parentheses": "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}",
    "repeat": "{{ trigger.entityKey * 1000000000 }}",
    "power": "{{ 9 ** 99999999 }}",
    "shared-references": "{% set a = 'a'*199999 %}{{ [a, a, a, a, a, a]|string }}",
    "sort-in-a-loop": (
        "{% for i in range(100000) %}{{ range(100000)|list|sort|length }}{% endfor %}"
    ),
    "map-chain": "{{ range(100000)|map('string')|map('center', 999999)|list }}",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TEMPLATES))
def test_hostile_templates_in_a_recipe_end_in_a_located_error(tmp_path: Path, name: str):
    recipe = json.loads(json.dumps(VALID_RECIPE))
    recipe["steps"][0]["with"]["entityKey"] = HOSTILE_TEMPLATES[name]
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(path), "--dry-run"], env={"COLUMNS": "200"})
    assert result.exit_code in (0, 2), result.output
    assert "Traceback" not in result.output
    assert "internal error" not in result.output
    flat = " ".join(result.output.split())
    assert re.search(r"recipe\.yaml:\d+", flat), flat  # the file and the line
    assert "steps[0].with.entityKey" in flat.replace(" ", "") or "steps[0]" in flat


@pytest.mark.parametrize("name", sorted(HOSTILE_TEMPLATES))
def test_hostile_templates_in_a_module_end_in_a_located_error(tmp_path: Path, name: str):
    source = Path(__file__).parents[2] / "actions" / "create_lead.yaml"
    module = yaml.safe_load(source.read_text(encoding="utf-8"))
    module["key"] = "hostile_lead"
    module["request"]["body"]["entityName"] = HOSTILE_TEMPLATES[name].replace("trigger.", "input.")
    folder = tmp_path / "mods" / "actions"
    folder.mkdir(parents=True)
    (folder / "hostile_lead.yaml").write_text(yaml.safe_dump(module), encoding="utf-8")
    runner = CliRunner()
    checked = runner.invoke(cli, ["modules", "validate", str(folder / "hostile_lead.yaml")])
    assert checked.exit_code in (0, 1), checked.output
    ran = runner.invoke(
        cli,
        [
            "action",
            "hostile_lead",
            "--input",
            "-",
            "--dry-run",
            "--modules",
            str(tmp_path / "mods"),
        ],
        input=json.dumps({"entityType": "Individual", "entityName": "Jane"}),
        env={"COLUMNS": "200"},
    )
    for result in (checked, ran):
        assert "Traceback" not in result.output
        assert "internal error" not in result.output
    assert ran.exit_code == 2, ran.output
    assert "hostile_lead.yaml:" in ran.output
