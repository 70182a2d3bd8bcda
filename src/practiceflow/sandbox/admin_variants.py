"""``GET, POST /_admin/variants``: which answer the sandbox plays for each open question.

``GET`` lists every topic with its answers, the default, the hostile answer and the one in
force. ``POST`` takes ``{"preset": "default" | "hostile" | "random:SEED", "set": {topic:
answer}}`` (both optional; the preset first, then ``set`` on top; without a preset, ``set``
changes only the topics it names). ``POST /_admin/reset`` returns to the variants the
sandbox started with. Kept apart from :mod:`practiceflow.sandbox.admin` so that module
stays a list of routes.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from practiceflow.sandbox.problems import ApiProblem
from practiceflow.sandbox.state import SandboxState
from practiceflow.sandbox.variants import TOPICS, Variants


def variants_view(variants: Variants) -> dict[str, Any]:
    """The answer of ``GET /_admin/variants``."""
    chosen = variants.as_dict()
    return {
        "topics": [
            {
                "topic": topic.name,
                "question": topic.question,
                "answers": list(topic.answers),
                "default": topic.default,
                "hostile": topic.hostile,
                "chosen": chosen[topic.name],
            }
            for topic in TOPICS
        ],
        "differences": variants.differences(),
    }


async def variants_route(state: SandboxState, request: Request, body: dict[str, Any]) -> Response:
    """Serve ``GET`` / ``POST /_admin/variants`` (``body`` is the parsed POST body)."""
    if request.method == "POST":
        preset, changes = body.get("preset"), body.get("set", {})
        if preset is not None and not isinstance(preset, str):
            raise ApiProblem(400, f"preset: got {preset!r}; expected default, hostile or random:N")
        if not isinstance(changes, dict) or not all(
            isinstance(value, str) for value in changes.values()
        ):
            raise ApiProblem(400, "set: expected an object of topic -> answer (strings)")
        try:
            base = Variants.preset(preset) if preset is not None else state.variants
            state.variants = base.with_answers(changes)
        except ValueError as exc:
            raise ApiProblem(400, str(exc)) from None
    return JSONResponse(variants_view(state.variants))
