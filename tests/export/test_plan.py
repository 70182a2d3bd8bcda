"""Templates as portable expressions: the JavaScript runtime shipped with the exports
evaluates each one to what the Jinja engine renders, and unsupported ones fail loudly."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from practiceflow.errors import ManifestError
from practiceflow.export.expression_tree import expression, tree
from practiceflow.templating import compile_template, compile_tree

EXPR_JS = Path(__file__).resolve().parents[2] / "connectors" / "zapier" / "lib" / "expr.js"

CONTEXT: dict[str, Any] = {
    "input": {"entityKey": "a/b c", "n": 3, "name": "Acme", "tags": ["x", "y"], "empty": ""},
    "item": {"status": "Accepted", "proposalKey": "k1", "data": {"formKey": "f1"}, "none": None},
    "body": {"data": {"proposalKey": "p9"}},
}

# (template, what it shows)
CASES = [
    ("{{ input.entityKey }}", "a lookup"),
    ("{{ input.missing | default('d') }}", "default on undefined"),
    ("{{ item.none | default('d') }}", "default keeps None"),
    ("{{ input.empty | default('d', true) }}", "default(x, true) replaces falsy"),
    ("/api/v1/leads/{{ input.entityKey | pathseg }}/convert", "path text with pathseg"),
    ("{{ item.status == 'Accepted' }}", "comparison"),
    ("{{ item.status | lower == 'accepted' and input.n > 2 }}", "filter, and"),
    ("{{ (item.get('missing') or '') | lower }}", ".get and or yielding an operand"),
    ("{{ input.missing is not defined or input.n in [1, 2, 3] }}", "tests and in"),
    ("{{ 'yes' if item is mapping else 'no' }}", "conditional and is mapping"),
    ("{% if item.get('proposalKey') %}proposal:{{ item.proposalKey }}{% endif %}", "if block"),
    ("{% set d = body.get('data') %}{{ d.get('proposalKey') }}", "set and .get on a local"),
    ("{{ (body.get('data') if body is mapping else body).get('proposalKey') }}", "computed"),
    ("{{ input | omit('tags', 'empty') }}", "omit"),
    ("{{ input.tags | length }}", "length"),
    ("{{ {'a': input.n, 'b': [input.name]} }}", "literals"),
]


def _node_eval(node: str, nodes: list[Any]) -> list[Any]:
    script = (
        "const {evaluate}=require(process.argv[1]);"
        "const data=JSON.parse(require('fs').readFileSync(0,'utf8'));"
        "process.stdout.write(JSON.stringify(data.nodes.map(n=>evaluate(n,data.ctx))));"
    )
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [node, "-e", script, str(EXPR_JS)],
        input=json.dumps({"nodes": nodes, "ctx": CONTEXT}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return list(json.loads(done.stdout))


def test_javascript_runtime_agrees_with_jinja(node_bin):
    templates = [compile_template(source) for source, _ in CASES]
    expected = [template.render(CONTEXT) for template in templates]
    got = _node_eval(node_bin, [expression(template) for template in templates])
    for (source, what), want, have in zip(CASES, expected, got, strict=True):
        assert have == want, f"{what}: {source!r} -> JS {have!r}, Jinja {want!r}"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("{{ input.name.upper() }}", "call"),
        ("{% for x in input.tags %}{{ x }}{% endfor %}", "For"),
        ("{{ input.tags | join(',') }}", "join"),
        ("{{ undeclared.x }}", "unknown name"),
    ],
)
def test_unsupported_templates_fail_with_their_location(source, reason):
    with pytest.raises(ManifestError, match=reason) as caught:
        expression(compile_template(source))
    assert "cannot be exported" in str(caught.value)


def test_trees_mark_template_leaves_and_keep_constants():
    compiled, issues = compile_tree(
        {"a": "{{ input.n }}", "b": [1, "text"]}, lambda at: compile_template("x").origin
    )
    assert not issues
    assert tree(compiled) == {"a": {"$pf": {"ref": ["input", "n"]}}, "b": [1, "text"]}
