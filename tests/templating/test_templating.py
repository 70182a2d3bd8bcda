"""The one Jinja environment: native values, omission, filters, and each sandbox guard."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from practiceflow.errors import ManifestError, TemplateError
from practiceflow.templating import (
    CompiledTemplate,
    Origin,
    compile_template,
    compile_tree,
    iter_templates,
    render_tree,
    set_clock,
)

ORIGIN = Origin("actions/demo.yaml", 12, 7, "request.body.amount")


def render(source: str, **context: object) -> object:
    return compile_template(source, ORIGIN).render(context)


@pytest.fixture
def fixed_clock():
    set_clock(lambda: datetime(2024, 5, 1, 23, 30, tzinfo=UTC))
    yield
    set_clock(None)


# -- native values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "context", "expected"),
    [
        ("{{ input.amount }}", {"input": {"amount": 10}}, 10),
        ("{{ input.amount }}", {"input": {"amount": 10.5}}, 10.5),
        ("{{ input.flag }}", {"input": {"flag": False}}, False),
        ("{{ input['items'] }}", {"input": {"items": [1, 2]}}, [1, 2]),
        ("{{ input.address }}", {"input": {"address": {"city": "Sydney"}}}, {"city": "Sydney"}),
        ("{{ input.lines[1].amount }}", {"input": {"lines": [{"amount": 1}, {"amount": 2}]}}, 2),
        ("{{ input.code }}", {"input": {"code": "00123"}}, "00123"),
        ("{{ input.code }}", {"input": {"code": "123"}}, "123"),
        ("{{ input.amount * 2 }}", {"input": {"amount": 10}}, 20),
        ("Total: {{ input.amount }}", {"input": {"amount": 10}}, "Total: 10"),
        ("{{ input.a }}{{ input.b }}", {"input": {"a": 1, "b": 2}}, "12"),
        ("{{ input.email | default(None) }}", {"input": {}}, None),
        ("{{ input.email | default('x@example.com') }}", {"input": {}}, "x@example.com"),
        ("{{ input.email | default(None) }}", {"input": {"email": "a@b.c"}}, "a@b.c"),
    ],
)
def test_single_expression_renders_its_native_value_and_text_stays_text(source, context, expected):
    assert render(source, **context) == expected
    assert type(render(source, **context)) is type(expected)


def test_a_string_that_looks_like_a_number_stays_a_string():
    # Jinja's own NativeEnvironment would turn '123' into 123: a tax number must not change.
    assert render("{{ input.taxNumber }}", input={"taxNumber": "123456782"}) == "123456782"


def test_a_method_is_not_data():
    with pytest.raises(TemplateError, match="renders a function"):
        render("{{ input.keys }}", input={"items": [1]})


def test_a_key_comes_before_a_method_of_the_same_name():
    # Every list action's output field is ``items``: ``steps.find.items[0]`` is its first row.
    rows = [{"entityKey": "k1"}]
    assert render("{{ input.items[0].entityKey }}", input={"items": rows}) == "k1"
    assert render("{{ input.values | length }}", input={"values": [1, 2]}) == 2


def test_templates_are_compiled_once_per_source():
    first = compile_template("{{ input.x }}", ORIGIN)
    second = compile_template("{{ input.x }}", Origin("other.yaml", 1, 1, "x"))
    assert first._run is second._run
    assert second.origin.file == "other.yaml"


def test_names_and_input_attributes_are_collected():
    template = compile_template(
        "{{ input.a }} {{ input['b'] }} {% for x in input.c %}{{ x }}{% endfor %}{{ now }}"
    )
    assert template.names == {"input", "now"}
    assert template.attributes["input"] == {"a", "b", "c"}


# -- errors name file, line and field -------------------------------------------------------


def test_an_undefined_name_fails_naming_the_template_location():
    with pytest.raises(TemplateError) as caught:
        render("{{ inptu.amount }}", input={"amount": 1})
    text = str(caught.value)
    assert "actions/demo.yaml:12:7 request.body.amount:" in text
    assert "'inptu' is undefined" in text
    assert isinstance(caught.value, ManifestError)


def test_a_missing_field_without_default_fails():
    with pytest.raises(TemplateError, match="has no attribute 'amount'"):
        render("{{ input.amount }}", input={})


def test_a_syntax_error_is_located_on_the_template_line():
    with pytest.raises(TemplateError) as caught:
        compile_template("line one\n{{ input.amount ", ORIGIN)
    issue = caught.value.issues[0]
    assert (issue.file, issue.line, issue.path) == ("actions/demo.yaml", 13, "request.body.amount")
    assert "template syntax" in issue.message


# -- sandbox guards, one test each ---------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ input.__class__ }}",
        "{{ input.__init__.__globals__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    ],
)
def test_sandbox_refuses_attribute_escapes(source):
    with pytest.raises(TemplateError, match=r"sandbox|unsafe"):
        render(source, input={})


@pytest.mark.parametrize(
    "source",
    [
        "{{ trigger.update({'entityKey': 'x'}) }}",
        "{{ trigger.pop('entityKey') }}",
        "{{ trigger.lines.append(1) }}",
        "{{ trigger.lines.clear() }}",
    ],
)
def test_sandbox_refuses_changing_what_a_template_reads(source):
    trigger = {"entityKey": "k", "lines": [1, 2]}
    with pytest.raises(TemplateError, match=r"sandbox|unsafe"):
        render(source, trigger=trigger)
    assert trigger == {"entityKey": "k", "lines": [1, 2]}


def test_sandbox_refuses_range_bombs():
    with pytest.raises(TemplateError, match="Range too big"):
        render("{{ range(10**9) | list | length }}")


def test_sandbox_refuses_huge_powers_even_at_compile_time():
    # Without the guard, Jinja would fold this constant while compiling, and hang.
    with pytest.raises(TemplateError, match="would exceed"):
        render("{{ 9 ** 99999999 }}")


def test_sandbox_refuses_string_repetition_bombs():
    with pytest.raises(TemplateError, match="repetition"):
        render("{{ 'a' * 1000000000 }}")


def test_sandbox_refuses_list_repetition_bombs():
    with pytest.raises(TemplateError, match="repetition"):
        render("{{ [1, 2] * 100000000 }}")


def test_sandbox_has_no_lipsum_cycler_or_joiner():
    for name in ("lipsum", "cycler", "joiner"):
        with pytest.raises(TemplateError, match="is undefined"):
            render("{{ " + name + "() }}")


def test_small_arithmetic_still_works():
    assert render("{{ 2 ** 10 }}") == 1024
    assert render("{{ 'ab' * 3 }}") == "ababab"


def test_no_autoescape():
    assert render("{{ input.name }} & co", input={"name": "<Smith>"}) == "<Smith> & co"


# -- filters ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01", "2024-05-01"),
        ("2024-05-01T23:30:00+10:00", "2024-05-01"),
        ("2024-05-01T20:30:00-05:00", "2024-05-02"),
        ("2024-05-01T09:00:00Z", "2024-05-01"),
        (date(2024, 5, 1), "2024-05-01"),
        (datetime(2024, 5, 1, 23, 59), "2024-05-01"),
        ("now", "2024-05-01"),
    ],
)
def test_date_filter_gives_the_utc_date(fixed_clock, value, expected):
    assert render("{{ value | date }}", value=value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01T09:30:00+10:00", "2024-04-30T23:30:00Z"),
        ("2024-05-01", "2024-05-01T00:00:00Z"),
        (datetime(2024, 5, 1, 9, 30, 15, 999), "2024-05-01T09:30:15Z"),
        ("now", "2024-05-01T23:30:00Z"),
    ],
)
def test_datetime_filter_gives_utc_iso_with_z(fixed_clock, value, expected):
    assert render("{{ value | datetime }}", value=value) == expected


def test_now_is_a_name_templates_can_format(fixed_clock):
    from practiceflow.templating import utcnow

    assert render("{{ now | date }}", now=utcnow()) == "2024-05-01"


def test_a_bad_date_names_what_was_expected():
    with pytest.raises(TemplateError, match="expected an ISO 8601 date"):
        render("{{ 'soon' | date }}")


def test_tojson_is_plain_json():
    assert render("{{ value | tojson }}", value={"a": "<b>"}) == '{"a": "<b>"}'


def test_pathseg_encodes_every_reserved_character():
    assert render("/x/{{ value | pathseg }}", value="a/b?c") == "/x/a%2Fb%3Fc"


# -- trees and the omission rule -------------------------------------------------------------


def _origin(path):
    return Origin("f.yaml", 1, 1, ".".join(map(str, path)))


def test_tree_renders_leaves_and_drops_none_values():
    tree, issues = compile_tree(
        {
            "name": "{{ input.name }}",
            "email": "{{ input.email | default(None) }}",
            "fixed": "constant",
            "count": 3,
            "lines": ["{{ input.name }}", "{{ input.nothing | default(None) }}"],
        },
        _origin,
    )
    assert issues == []
    assert render_tree(tree, {"input": {"name": "Jane"}}) == {
        "name": "Jane",
        "fixed": "constant",
        "count": 3,
        "lines": ["Jane"],
    }


def test_tree_collects_every_syntax_error():
    _, issues = compile_tree({"a": "{{ x", "b": ["{% if %}"]}, _origin)
    assert [issue.path for issue in issues] == ["a", "b.0"]


def test_iter_templates_finds_every_leaf():
    tree, _ = compile_tree({"a": "{{ x }}", "b": ["{{ y }}", "z"]}, _origin)
    found = list(iter_templates(tree))
    assert all(isinstance(t, CompiledTemplate) for t in found)
    assert [t.source for t in found] == ["{{ x }}", "{{ y }}"]
