"""The template sandbox's limits: every amplifying operation, loops, recursion and nesting.

Each case is refused before it allocates, with a message naming the file, the line, the
template and the operation; constant cases already when the template is loaded.
"""

from __future__ import annotations

import pytest

from practiceflow.errors import TemplateError
from practiceflow.templating import Origin, compile_template
from practiceflow.templating._limits import MAX_CALL_DEPTH, MAX_ITERATIONS, MAX_SIZE

ORIGIN = Origin("recipes/hostile.yaml", 12, 9, "steps[0].with.note")

# (case, template, words the refusal says): operands are constants, so loading refuses.
AT_LOAD = [
    ("center", "{{ 'x'|center(2000000000) }}", "center would build 2000000000"),
    ("printf width", "{{ '%2000000000s'|format(1) }}", "format would build 2000000000"),
    ("printf precision", "{{ '%.2000000000f'|format(1) }}", "format would build"),
    ("indent", "{{ 'x'|indent(2000000000) }}", "indent would build"),
    ("replace", "{{ 'abc'|replace('b', 'x' * 99999) }}", None),  # within the limit
    ("repeat", "{{ 'a' * 1000000000 }}", "repetition would build"),
    ("batch fill", "{{ [1]|batch(2000000000, 'x')|list }}", "batch would build"),
    ("slice", "{{ [1]|slice(2000000000)|list }}", "slice would build"),
    ("tojson indent", "{{ [1]|tojson(indent=2000000000) }}", "indent of 2000000000"),
    ("concat", "{{ 'a' ~ 'b' }}", None),
    ("% star width", "{{ '%*s' % (2000000000, 'x') }}", "'*' width"),
    ("% width", "{{ '%2000000000s' % 1 }}", "'%' formatting would build"),
]

# Refused while rendering (operands only known then).
AT_RENDER = [
    ("str.format width", "{{ '{:>2000000000}'.format(1) }}", "str.format would build"),
    ("nested format spec", "{{ '{:{w}}'.format(1, w=2000000000) }}", "nested field"),
    ("method center", "{{ 'x'.center(trigger.n) }}", "center would build 2000000000"),
    ("method ljust", "{{ 'x'.ljust(trigger.n) }}", "ljust would build"),
    ("method zfill", "{{ '1'.zfill(trigger.n) }}", "zfill would build"),
    ("expandtabs", "{{ 'a\tb'.expandtabs(trigger.n) }}", "expandtabs would build"),
    ("join result", "{{ range(100000)|join(' ' * 99999) }}", "join would build"),
    ("str.join", "{{ ('x' * 99999).join(range(100000)|map('string')) }}", "join would build"),
    ("replace result", "{{ ('a' * 99999)|replace('a', 'a' * 99999) }}", "replace would build"),
    ("str.replace", "{{ ('a' * 99999).replace('a', 'a' * 99999) }}", "replace would build"),
    ("indent of a long text", "{{ ('x\n' * 99999)|indent(99) }}", "indent would build"),
    ("wordwrap", "{{ ('ab ' * 9999)|wordwrap(1, wrapstring='y' * 9999) }}", "wordwrap would"),
    ("translate", "{{ ('a' * 999).translate({97: 'x' * 99999}) }}", "translate would build"),
    ("repeat a variable", "{{ 'ab' * trigger.n }}", "repetition would build"),
    ("list repeat", "{% set a = [1] * 300000 %}{{ a * 4 }}", "repetition would build 1200004"),
    ("plus", "{% set a = 'a' * 999999 %}{{ a + a }}", "'+' would build"),
    ("tilde", "{% set a = 'a' * 999999 %}{{ a ~ a }}", "'~' would build"),
    (
        "shared references printed",
        "{% set a = 'a' * 199999 %}{% set b = [a, a, a, a, a, a] %}{{ b|string }}",
        "the input of 'string' is larger",
    ),
    (
        "shared references returned",
        "{% set a = 'a' * 199999 %}{{ [a, a, a, a, a, a] }}",
        "value is larger than the limit",
    ),
    ("text output", "{% for i in range(100000) %}{{ 'x' * 99 }}{% endfor %}", "text would exceed"),
    (
        "nested loops",
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
        f"more than {MAX_ITERATIONS} iterations",
    ),
    ("range length", "{{ range(10**9)|list|length }}", "Range too big"),
    (
        "recursive macro",
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(trigger.entityKey) }}",
        f"deeper than {MAX_CALL_DEPTH} levels",
    ),
    (
        "recursive loop",
        "{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}",
        f"deeper than {MAX_CALL_DEPTH} levels",
    ),
]

CONTEXT = {"trigger": {"entityKey": "k-1", "n": 2_000_000_000}}


@pytest.mark.parametrize(
    ("template", "words"), [case[1:] for case in AT_LOAD], ids=[case[0] for case in AT_LOAD]
)
def test_constant_operations_over_the_limit_are_refused_at_load(template, words):
    if words is None:  # within the limits: loads and renders
        assert compile_template(template, ORIGIN).render(CONTEXT)
        return
    with pytest.raises(TemplateError) as caught:
        compile_template(template, ORIGIN)
    text = str(caught.value)
    assert "recipes/hostile.yaml:12:9 steps[0].with.note" in text
    assert repr(template)[1:30] in text
    assert words in text


@pytest.mark.parametrize(
    ("template", "words"), [case[1:] for case in AT_RENDER], ids=[case[0] for case in AT_RENDER]
)
def test_operations_over_the_limit_are_refused_while_rendering(template, words):
    compiled = compile_template(template, ORIGIN)
    with pytest.raises(TemplateError) as caught:
        compiled.render(CONTEXT)
    text = str(caught.value)
    assert "recipes/hostile.yaml:12" in text
    assert "steps[0].with.note" in text
    assert repr(template)[1:30] in text
    assert words in text


def test_the_refusal_names_the_line_inside_a_multi_line_template():
    source = "first line\n{{ 'x' }}\n{{ 'y'.center(trigger.n) }}"
    with pytest.raises(TemplateError) as caught:
        compile_template(source, ORIGIN).render(CONTEXT)
    assert "recipes/hostile.yaml:14 steps[0].with.note" in str(caught.value)


def test_deeply_nested_expressions_are_refused_not_a_recursion_error():
    source = "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}"
    with pytest.raises(TemplateError, match="nested too deeply"):
        compile_template(source, ORIGIN)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ 'x'|center(5) }}", "  x  "),
        ("{{ '%5s'|format('ab') }}", "   ab"),
        ("{{ '{:>4}'.format(7) }}", "   7"),
        ("{{ '%05.1f' % 2.25 }}", "002.2"),
        ("{{ [1, 2, 3]|join(', ') }}", "1, 2, 3"),
        ("{{ '-'.join(['a', 'b']) }}", "a-b"),
        ("{{ 'a-b'|replace('-', '+') }}", "a+b"),
        ("{{ 'a\nb'|indent(2) }}", "a\n  b"),
        ("{{ 'ab' ~ 1 ~ [2] }}", "ab1[2]"),
        ("{{ 'a' + 'b' }}", "ab"),
        ("{{ [1] + [2] }}", [1, 2]),
        ("{{ 7 % 3 }}", 1),
        ("{{ [1, 2, 3]|batch(2, 0)|list }}", [[1, 2], [3, 0]]),
        ("{% for a in range(300) %}{% for b in range(300) %}{% endfor %}{% endfor %}ok", "ok"),
        (
            "{% macro down(n) %}{{ n }}{% if n %}{{ down(n - 1) }}{% endif %}{% endmacro %}"
            "{{ down(5) }}",
            "543210",
        ),
        (
            "{% for x in [[1, [2]]] recursive %}{{ loop(x) if x is iterable else x }}{% endfor %}",
            "12",
        ),
        ("{{ ('x' * 1000) | length }}", 1000),
    ],
)
def test_ordinary_templates_stay_within_the_limits(template, expected):
    assert compile_template(template, ORIGIN).render({}) == expected


def test_the_loop_budget_is_per_render():
    compiled = compile_template("{% for a in range(60000) %}{% endfor %}done", ORIGIN)
    for _ in range(3):  # 180,000 iterations in all: each render has its own budget
        assert compiled.render({}) == "done"


def test_a_value_just_under_the_limit_renders():
    value = compile_template("{{ 'a' * n }}", ORIGIN).render({"n": MAX_SIZE})
    assert len(value) == MAX_SIZE
