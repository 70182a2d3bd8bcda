"""Safe YAML with positions: what is refused, and where each value is."""

from __future__ import annotations

import pytest
import yaml

from practiceflow.manifest import yamlpos
from practiceflow.manifest.yamlpos import YamlLoadError, format_path, load_yaml


def test_positions_of_values_and_keys_are_one_based():
    located = load_yaml("a: 1\nb:\n  - x: hello\n")
    assert located.data == {"a": 1, "b": [{"x": "hello"}]}
    assert located.positions[("a",)] == (1, 4)
    assert located.positions[("b", 0, "x")] == (3, 8)
    assert located.key_positions[("b", 0, "x")] == (3, 5)


def test_where_falls_back_to_the_nearest_parent():
    located = load_yaml("a:\n  b: 1\n")
    assert located.where(("a", "missing", 3)) == located.positions[("a",)]
    assert located.where(("a", "b"), key=True) == (2, 3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("d: 2024-05-01\n", {"d": "2024-05-01"}),
        ("t: 2024-05-01T09:30:00Z\n", {"t": "2024-05-01T09:30:00Z"}),
        ("400: message\n", {"400": "message"}),
        ("true: x\n", {"true": "x"}),
        ("n: ~\n", {"n": None}),
        ("f: 1.5\n", {"f": 1.5}),
    ],
)
def test_scalars_stay_json_like(text, expected):
    assert load_yaml(text).data == expected


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        ("a: &x [1, 2]\nb: *x\n", "aliases", (2, 4)),
        ("a: 1\na: 2\n", "duplicate key 'a'", (2, 1)),
        ("<<: {a: 1}\n", "merge keys", (1, 1)),
        ("a: !!python/object/apply:os.system ['true']\n", "YAML tag", (1, 4)),
        ("a: !!python/name:os.system x\n", "YAML value", (1, 4)),
        ("? [1, 2]\n: x\n", "plain scalars", (1, 3)),
        ("a: [1\n", "YAML syntax", (2, 1)),
    ],
)
def test_unsafe_or_broken_yaml_is_refused_with_its_position(text, message, where):
    with pytest.raises(YamlLoadError, match=message) as caught:
        load_yaml(text)
    assert (caught.value.line, caught.value.column) == where


def test_billion_laughs_is_refused_before_expansion():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    with pytest.raises(YamlLoadError, match="aliases"):
        load_yaml(bomb)


def test_node_count_is_capped():
    with pytest.raises(YamlLoadError, match="more than 10 nodes"):
        load_yaml("[" + ", ".join(["1"] * 20) + "]", max_nodes=10)


def test_document_size_is_capped():
    with pytest.raises(YamlLoadError, match="larger than 100 bytes"):
        load_yaml("a: " + "x" * 200, max_bytes=100)


def test_empty_document_is_none():
    assert load_yaml("# nothing\n").data is None


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ((), ""),
        (("steps", 1, "with", "templateId"), "steps[1].with.templateId"),
        (("errors", "400"), "errors.400"),
        (("x-pii",), "x-pii"),
        (("a", "b c"), "a['b c']"),
    ],
)
def test_format_path(path, text):
    assert format_path(path) == text


@pytest.fixture(params=["libyaml", "pure-python"])
def parser(request, monkeypatch):
    """Every limit holds on both of PyYAML's parsers (builds without libyaml exist)."""
    if request.param == "pure-python":
        monkeypatch.setattr(yamlpos, "_FastLoader", None)
    elif yamlpos._FastLoader is None:
        pytest.fail("this PyYAML build has no libyaml: the lock pins wheels that ship it")
    return request.param


DEEP = {
    "flow-just-over": ("[" * 101 + "]" * 101, (1, 101)),
    "flow-libyaml-cap": ("[" * 1_001 + "]" * 1_001, (1, 101)),
    "flow-very-deep": ("[" * 50_000 + "]" * 50_000, (1, 101)),
    "flow-unclosed": ("[" * 50_000, (1, 101)),
    "flow-mapping": ("{a: " * 5_000 + "1" + "}" * 5_000, (1, 401)),
    "block": ("".join(" " * i + "a:\n" for i in range(1_000)) + " " * 1_000 + "b", (101, 101)),
}


@pytest.mark.parametrize("name", sorted(DEEP))
def test_deep_nesting_is_refused_with_its_position_on_both_parsers(parser, name):
    text, where = DEEP[name]
    with pytest.raises(YamlLoadError, match="nesting deeper than 100 levels") as caught:
        load_yaml(text)
    assert (caught.value.line, caught.value.column) == where


def test_nesting_at_the_limit_loads_on_both_parsers(parser):
    assert load_yaml("[" * 100 + "]" * 100).data is not None


def test_a_syntax_error_before_deep_nesting_is_located_on_both_parsers(parser):
    with pytest.raises(YamlLoadError, match="YAML syntax") as caught:
        load_yaml("a: [1\nb: " + "[" * 5_000)
    assert caught.value.line == 2


def test_a_parser_refusing_the_stream_on_its_own_terms_falls_back_to_the_pure_check(monkeypatch):
    """A libyaml build that caps nesting itself (PyYAML 6.0.4) must not leave the check to
    the recursive composer."""

    class RefusingLoader(yamlpos._Loader):
        def check_event(self, *choices):
            raise yaml.scanner.ScannerError(problem="exceeded maximum nesting depth")

    monkeypatch.setattr(yamlpos, "_FastLoader", RefusingLoader)
    with pytest.raises(YamlLoadError, match="nesting deeper than 100 levels"):
        load_yaml("[" * 50_000 + "]" * 50_000)


@pytest.mark.parametrize("error", [RecursionError, MemoryError])
def test_running_out_of_stack_or_memory_while_reading_is_a_load_error(monkeypatch, error):
    """Whatever limit a parser build has, exhausting the stack or memory is a clear error,
    never a traceback (simulated: a real overflow surfaces wherever the stack happens to end).
    """

    def exhausted(*args, **kwargs):
        raise error

    monkeypatch.setattr(yamlpos, "_load_with", exhausted)
    with pytest.raises(YamlLoadError, match="too deeply nested or too large"):
        load_yaml("a: 1\n")
