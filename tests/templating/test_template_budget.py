"""The per-render budget: what one render does in all is bounded, not only each value.

A template that repeats cheap operations (a loop around a sort, a lazy chain of ``map``
building big strings, a membership test inside a loop, a long loop body) is refused with a
located error after a bounded amount of work; ordinary recipes never meet the limits, and
each render starts with a fresh budget.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from practiceflow.errors import TemplateError
from practiceflow.manifest import load_modules
from practiceflow.runner import dry_run, validate_recipe
from practiceflow.runner.validate import build_context
from practiceflow.templating import Origin, compile_template, render_tree
from practiceflow.templating._limits import MAX_TEXT, MAX_WORK

ORIGIN = Origin("recipes/hostile.yaml", 12, 9, "steps[0].with.note")
TEST_MODULES = Path(__file__).parents[1] / "runner" / "modules"

CPU = "{% for i in range(100000) %}{{ range(100000)|list|sort|length }}{% endfor %}"
MEMORY = "{{ range(100000)|map('string')|map('center', WIDTH)|list }}"


class Rows:
    """An iterable in the context that counts the items a render pulls from it.

    It raises once more than ``stop_after`` are pulled, so that a render the budget does not
    stop fails fast instead of running for hours.
    """

    def __init__(self, size: int, stop_after: int) -> None:
        self.size = size
        self.stop_after = stop_after
        self.pulled = 0

    def __iter__(self) -> Iterator[int]:
        for number in range(self.size):
            if self.pulled >= self.stop_after:
                message = f"the render went on past {self.stop_after} items"
                raise RuntimeError(message)
            self.pulled += 1
            yield number


def _refusal(template: str, context: dict[str, object] | None = None) -> str:
    compiled = compile_template(template, ORIGIN)
    with pytest.raises(TemplateError) as caught:
        compiled.render(context or {})
    return str(caught.value)


def _assert_located(text: str, template: str) -> None:
    assert "recipes/hostile.yaml:12" in text
    assert "steps[0].with.note" in text
    assert repr(template)[1:40] in text


# ---- the audit's reproductions -----------------------------------------------------------


def test_a_sort_repeated_by_a_loop_is_refused_with_its_location():
    text = _refusal(CPU)
    _assert_located(text, CPU)
    assert f"past {MAX_WORK} units of work" in text


@pytest.mark.parametrize("width", [9999, 999999])
def test_a_chain_of_map_building_big_strings_is_refused_with_its_location(width):
    template = MEMORY.replace("WIDTH", str(width))
    text = _refusal(template)
    _assert_located(text, template)
    assert f"'center' would take this render past {MAX_TEXT} characters" in text


def test_the_loop_around_a_sort_stops_within_a_few_iterations():
    rows = Rows(100_000, stop_after=50)
    template = "{% for i in rows %}{{ range(100000)|list|sort|length }}{% endfor %}"
    text = _refusal(template, {"rows": rows})
    assert "units of work" in text
    # Each iteration builds and reads a few lists of 100,000 items.
    assert rows.pulled <= MAX_WORK // 100_000 + 1


def test_a_lazy_chain_is_charged_item_by_item_and_stays_small_in_memory():
    rows = Rows(100_000, stop_after=200)
    template = "{{ rows|map('string')|map('center', 999999)|list }}"
    tracemalloc.start()
    try:
        text = _refusal(template, {"rows": rows})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "characters of text" in text
    assert rows.pulled <= MAX_TEXT // 999_999 + 1
    assert peak < 64 * 2**20  # the text budget is 10 MB of ASCII; without it, gigabytes


@pytest.mark.parametrize(
    ("case", "template", "words"),
    [
        ("membership in a loop", "{% for i in rows %}{{ -1 in big }}{% endfor %}", "'in'"),
        ("a test in a loop", "{% for i in rows %}{{ -1 is in big }}{% endfor %}", "'in'"),
        ("select with a test", "{{ rows|select('in', big)|list }}", "'in'"),
        ("equality in a loop", "{% for i in rows %}{{ big == big2 }}{% endfor %}", "'=='"),
        ("a filter in a loop", "{% for i in rows %}{{ big|sum }}{% endfor %}", "'sum'"),
        ("a method in a loop", "{% for i in rows %}{{ big.count(1) }}{% endfor %}", "list.count"),
        (
            "a long loop body",
            "{% for i in rows %}" + "{% set x = i.real %}" * 200 + "{% endfor %}",
            "a loop",
        ),
        (
            "a long macro body",
            "{% macro m() %}" + "{% set x = 1 %}" * 200 + "{% endmacro %}"
            "{% for i in rows %}{{ m() }}{% endfor %}",
            "units of work",
        ),
    ],
)
def test_work_repeated_by_a_loop_is_refused_after_a_bounded_number_of_items(case, template, words):
    big = list(range(50_000))
    rows = Rows(100_000, stop_after=1_000)
    text = _refusal(template, {"rows": rows, "big": big, "big2": list(big)})
    assert "units of work" in text, case
    assert words in text, case
    assert rows.pulled < 1_000, case


def test_a_recursive_loop_is_charged_for_its_body_at_every_level():
    # 2**20 runs of the body, each within the depth limit: the body's charge stops it.
    template = (
        "{% for x in rows recursive %}{% set y = x %}"
        "{% if loop.depth < 20 %}{{ loop(rows) }}{% endif %}{% endfor %}"
    )
    text = _refusal(template, {"rows": [1, 2]})
    assert "a loop's or macro's body would take this render past" in text


def test_the_refusal_names_the_line_inside_a_multi_line_template():
    template = "first line\n{% for i in rows %}\n{{ range(100000)|list|sort|length }}{% endfor %}"
    text = _refusal(template, {"rows": Rows(100_000, stop_after=50)})
    assert "recipes/hostile.yaml:14 steps[0].with.note" in text


# ---- each render has its own budget ------------------------------------------------------

# Builds and reads lists of 60,000 items five times over: more than half of the work one
# render may do, less than all of it.
OVER_HALF = "{{ range(60000)|list|sort|length }}"


def test_the_template_uses_more_than_half_of_a_render_budget():
    twice = "{% for i in range(2) %}" + OVER_HALF + "{% endfor %}"
    assert "units of work" in _refusal(twice)


def test_the_budget_starts_afresh_for_each_render():
    compiled = compile_template(OVER_HALF, ORIGIN)
    for _ in range(3):
        assert compiled.render({}) == 60_000


def test_a_refused_render_leaves_nothing_spent_for_the_next():
    _refusal(CPU)
    assert compile_template(OVER_HALF, ORIGIN).render({}) == 60_000


# ---- ordinary recipes stay well within the budget -----------------------------------------

ROWS = [
    {
        "id": n,
        "name": f"client {n} pty ltd",
        "email": f"Accounts{n}@Example.COM",
        "status": "Active" if n % 5 else "Archived",
        "parent": n // 10,
        "tags": ["tax", "bas", f"region-{n % 7}"],
        "lines": [
            {"amount": 40 + (n * k) % 300, "narration": f"line {k} of client {n}"} for k in range(6)
        ],
    }
    for n in range(500)
]

RECIPE = """\
name: clients to summaries
trigger: {use: test_event}
vars: {out: out/summaries.jsonl}
steps:
  - id: lines
    use: write_jsonl
    for_each: "{{ trigger.rows | selectattr('status', 'eq', 'Active') | sort(attribute='name') | list }}"
    with:
      path: "{{ vars.out }}"
      record:
        name: "{{ item.name | title }}"
        email: "{{ item.email | lower }}"
        tags: "{{ item.tags | map('upper') | join(', ') }}"
        total: "{{ item.lines | sum(attribute='amount') }}"
        large: "{{ item.lines | selectattr('amount', 'gt', 200) | list | length }}"
        narration: "{{ item.lines | map(attribute='narration') | join('; ') | truncate(120) }}"
        siblings: "{{ trigger.rows | selectattr('parent', 'eq', item.parent) | rejectattr('id', 'eq', item.id) | map(attribute='name') | join(', ') }}"
  - id: report
    use: write_jsonl
    with:
      path: "{{ vars.out }}"
      record:
        text: "{% for r in trigger.rows if r.status == 'Active' %}{{ r.name }}: {{ r.tags | join(', ') }} ({{ r.lines | sum(attribute='amount') }}){% if not loop.last %}; {% endif %}{% endfor %}"
"""  # noqa: E501  (a recipe reads best with each template on one line)


def test_a_recipe_over_500_rows_with_joins_and_filters_renders(tmp_path: Path):
    path = tmp_path / "summaries.yaml"
    path.write_text(RECIPE, encoding="utf-8")
    recipe = validate_recipe(path, registry=load_modules([TEST_MODULES]))
    payload = {"ref": "r", "rows": ROWS}

    shown = dry_run(recipe, trigger=payload)
    assert [step.status for step in shown] == ["would_send"] * len(shown)

    # Every iteration, as the runner renders them: the list once, then each step's input.
    now = datetime(2024, 5, 1, tzinfo=UTC)
    lines, report = recipe.recipe.steps
    context = build_context(payload, {}, recipe.recipe.vars, now)
    items = lines.for_each.render(context)
    assert len(items) == 400
    records = [
        render_tree(lines.with_, build_context(payload, {}, recipe.recipe.vars, now, item))
        for item in items
    ]
    first = records[0]["record"]
    assert first["name"] == "Client 1 Pty Ltd"
    assert first["tags"] == "TAX, BAS, REGION-1"
    assert first["siblings"].startswith("client 0 pty ltd, client 2 pty ltd")
    text = render_tree(report.with_, context)["record"]["text"]
    assert len(text.split("; ")) == 400
