"""The console's starlette application: pages under ``/console/``, JSON under ``/console/api/``.

Pages are server-rendered Jinja (autoescaped, no JavaScript): recipes, runs, a run, attention
(with resolve and settle forms that do what ``practiceflow runs resolve`` and ``attention
settle`` do) and budget. ``/console/api/...`` returns the same data as JSON. Every POST carries
a CSRF token (:mod:`.security`); every response is built from :mod:`.data`, which masks.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from practiceflow.console import chart
from practiceflow.console.data import (
    ConsoleContext,
    attention_view,
    budget_view,
    parse_filters,
    recipes_view,
    run_view,
    runs_view,
)
from practiceflow.console.security import (
    CSRF_FIELD,
    SESSION_COOKIE,
    TOKEN_COOKIE,
    Guard,
)
from practiceflow.errors import PracticeflowError
from practiceflow.service.needs_person import settle
from practiceflow.state import RESOLUTIONS, RUN_STATUSES
from practiceflow.state.runids import AmbiguousRunId, find_run

#: Where the console lives in the URL space of ``serve``.
PREFIX = "/console"
_MAX_FORM = 64 * 1024
Handler = Callable[[Request], Awaitable[Response]]


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("practiceflow.console", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)
    env.filters["or_not_recorded"] = lambda value: "not recorded" if value is None else value
    return env


def _stylesheet() -> str:
    return (resources.files("practiceflow.console") / "templates" / "console.css").read_text(
        encoding="utf-8"
    )


class _Console:
    """The handlers, bound to one context and guard."""

    def __init__(self, ctx: ConsoleContext, guard: Guard) -> None:
        self.ctx = ctx
        self.guard = guard
        self.env = _environment()
        self.css = _stylesheet()

    def guarded(self, handler: Handler) -> Handler:
        """Check the token, keep the token out of URLs, give each visitor a session."""

        async def wrapped(request: Request) -> Response:
            if not self.guard.allowed(request):
                if request.url.path.startswith(PREFIX + "/api/"):
                    return JSONResponse({"error": "a console token is required"}, 401)
                return self.page(
                    request,
                    "error.html",
                    {"message": "a console token is required: open the console with ?token=..."},
                    status=401,
                )
            if self.guard.token and "token" in request.query_params:
                rest = {k: v for k, v in request.query_params.items() if k != "token"}
                target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
                response: Response = RedirectResponse(target, 303)
                response.set_cookie(
                    TOKEN_COOKIE, self.guard.token, httponly=True, samesite="strict", path=PREFIX
                )
                return response
            self.ctx.refresh_secrets()
            session = Guard.session_of(request)
            request.state.session = session or Guard.new_session()  # forms' CSRF tokens use it
            response = await handler(request)
            if session is None:
                self._set_session(response, request.state.session)
            response.headers.setdefault("Cache-Control", "no-store")
            response.headers.setdefault("X-Frame-Options", "DENY")
            response.headers.setdefault("Referrer-Policy", "no-referrer")
            return response

        return wrapped

    @staticmethod
    def _set_session(response: Response, session: str) -> None:
        response.set_cookie(SESSION_COOKIE, session, httponly=True, samesite="strict", path=PREFIX)

    async def _form(self, request: Request) -> dict[str, str] | None:
        """The POSTed form's fields (the last value of each), or None when it is too large."""
        raw = await request.body()
        if len(raw) > _MAX_FORM:
            return None
        return {key: values[-1] for key, values in parse_qs(raw.decode("utf-8", "replace")).items()}

    async def _run(self, request: Request, run_id: str) -> tuple[Any, Response | None]:
        """The run's view, or the response saying it is ambiguous or missing."""
        try:
            data = await self._data(run_view, run_id)
        except AmbiguousRunId as exc:
            return None, self._ambiguous(request, exc)
        return data, self._missing(request, run_id) if data is None else None

    def page(
        self, request: Request, name: str, context: dict[str, Any], status: int = 200
    ) -> HTMLResponse:
        """Render a template with the common context."""
        template = self.env.get_template(name)
        body = template.render(
            prefix=PREFIX, path=request.url.path, practice=self.ctx.practice, **context
        )
        return HTMLResponse(body, status)

    async def _data(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(func, self.ctx, *args, **kwargs)

    async def css_file(self, request: Request) -> Response:
        del request
        return Response(self.css, media_type="text/css")

    async def home(self, request: Request) -> Response:
        rows = await self._data(recipes_view)
        return self.page(request, "recipes.html", {"recipes": rows, "title": "Recipes"})

    async def runs(self, request: Request) -> Response:
        query = request.query_params
        recipe, status, day, problems = parse_filters(
            query.get("recipe"), query.get("status"), query.get("date")
        )
        rows = await self._data(runs_view, recipe=recipe, status=status, day=day)
        context = {
            "title": "Runs",
            "runs": rows,
            "problems": problems,
            "filters": {
                "recipe": recipe or "",
                "status": status or "",
                "date": query.get("date", ""),
            },
            "statuses": RUN_STATUSES,
            "recipes": sorted({row["name"] for row in await self._data(recipes_view)}),
        }
        return self.page(request, "runs.html", context)

    async def run(self, request: Request) -> Response:
        run_id = str(request.path_params["run_id"])
        data, refused = await self._run(request, run_id)
        if refused is not None:
            return refused
        context = {"title": f"Run {run_id}", "run": data, "resolved": request.query_params}
        return self.page(request, "run.html", context)

    def _ambiguous(self, request: Request, exc: AmbiguousRunId) -> Response:
        if request.url.path.startswith(PREFIX + "/api/"):
            candidates = [run.run_id for run in exc.candidates]
            return JSONResponse({"error": str(exc), "candidates": candidates}, 409)
        context = {"message": str(exc), "title": "Which run?"}
        return self.page(request, "error.html", context, 409)

    def _missing(self, request: Request, run_id: str) -> Response:
        message = f"no run {run_id!r} in the state store; see 'practiceflow runs list'"
        if request.url.path.startswith(PREFIX + "/api/"):
            return JSONResponse({"error": message}, 404)
        return self.page(request, "error.html", {"message": message, "title": "Not found"}, 404)

    async def attention(self, request: Request) -> Response:
        rows = await self._data(attention_view)
        session = request.state.session
        for row in rows:  # an entry of the attention table is settled from here
            if row.get("entry"):
                row["csrf"] = self.guard.csrf_token(session, f"settle:{row['run_id']}")
        context = {
            "title": "Needs attention",
            "steps": rows,
            "who": self.ctx.who,
            "csrf_field": CSRF_FIELD,
            "settled": request.query_params.get("settled"),
        }
        return self.page(request, "attention.html", context)

    async def settle(self, request: Request) -> Response:
        """Settle an attention entry: what ``practiceflow attention settle`` does."""
        entry_id = str(request.path_params["entry_id"])
        form = await self._form(request)
        if form is None:
            return self.page(request, "error.html", {"message": "form too large"}, 413)
        if not self.guard.csrf_ok(request, f"settle:{entry_id}", form.get(CSRF_FIELD)):
            message = "this form has no valid CSRF token; open 'Needs attention' again"
            return self.page(request, "error.html", {"message": message, "title": "Refused"}, 403)
        who = form.get("who", "").strip() or self.ctx.who
        note = form.get("note", "").strip()
        problem = None if note else "note: say what you checked (it is kept with the entry)"
        if problem is None:
            try:
                await run_in_threadpool(self._settle, entry_id, who, note)
            except PracticeflowError as exc:
                problem = str(exc)
        if problem is not None:
            context = {"message": self.ctx.redactor.text(problem), "title": "Not settled"}
            return self.page(request, "error.html", context, 409)
        return RedirectResponse(f"{PREFIX}/attention?{urlencode({'settled': entry_id})}", 303)

    def _settle(self, entry_id: str, who: str, note: str) -> None:
        entry = self.ctx.store.get_attention(entry_id)
        if entry is None or entry.practice != self.ctx.practice:
            message = f"no attention entry {entry_id!r}; see 'practiceflow attention list'"
            raise PracticeflowError(message)
        settle(self.ctx.store, entry, who, note)

    async def budget(self, request: Request) -> Response:
        data = await self._data(budget_view)
        limits = data["limits"]
        forecast = data["forecast"] or {}
        per_day = forecast.get("per_day")
        charts = {}
        if data["per_hour"] is not None:
            charts["hour"] = chart.bar_chart(
                "requests per hour, last 24 hours",
                data["per_hour"],
                limits["per_hour"],
                forecast=None if per_day is None else per_day / 24,
                tick_every=3,
            )
            charts["minute"] = chart.bar_chart(
                "requests per minute, last hour",
                data["per_minute"],
                limits["per_minute"],
                forecast=None if per_day is None else per_day / 1440,
                tick_every=10,
            )
            charts["day"] = chart.day_gauge(data["last_day"], limits["per_day"], per_day)
        context = {"title": "Budget", "budget": data, "charts": charts}
        return self.page(request, "budget.html", context)

    @staticmethod
    def _purpose(run_id: str, step_id: str) -> str:
        return f"resolve:{run_id}:{step_id}"

    async def confirm(self, request: Request) -> Response:
        run_id = str(request.path_params["run_id"])
        step_id = str(request.path_params["step_id"])
        as_ = request.query_params.get("as", "")
        data, refused = await self._run(request, run_id)
        if refused is not None:
            return refused
        step = next((item for item in data["steps"] if item["step"] == step_id), None)
        problem = None
        if as_ not in RESOLUTIONS:
            problem = f"as: got {as_!r}; valid values are {list(RESOLUTIONS)}"
        elif step is None:
            problem = f"run {run_id} has no step {step_id!r}"
        elif not step["resolvable"]:
            problem = (
                f"run {run_id} step {step_id!r}: only a step that is ['failed', 'in_doubt'] "
                f"can be resolved; it is {step['status']}"
            )
        session = request.state.session
        context = {
            "title": "Confirm",
            "run": data,
            "step": step,
            "as_": as_,
            "problem": problem,
            "who": self.ctx.who,
            "csrf_field": CSRF_FIELD,
            "csrf": self.guard.csrf_token(session, self._purpose(run_id, step_id)),
        }
        return self.page(request, "confirm.html", context, 409 if problem else 200)

    async def resolve(self, request: Request) -> Response:
        run_id = str(request.path_params["run_id"])
        step_id = str(request.path_params["step_id"])
        form = await self._form(request)
        if form is None:
            return self.page(request, "error.html", {"message": "form too large"}, 413)
        if not self.guard.csrf_ok(request, self._purpose(run_id, step_id), form.get(CSRF_FIELD)):
            message = (
                "this form has no valid CSRF token (it expired, or did not come from this "
                "console); open the step again and confirm from there"
            )
            return self.page(request, "error.html", {"message": message, "title": "Refused"}, 403)
        as_ = form.get("as", "")
        who = form.get("who", "").strip() or self.ctx.who
        note = form.get("note", "")
        output: Any = None
        problem = None
        if as_ not in RESOLUTIONS:
            problem = f"as: got {as_!r}; valid values are {list(RESOLUTIONS)}"
        elif form.get("output", "").strip() and as_ == "done":
            try:
                output = json.loads(form["output"])
            except (ValueError, RecursionError) as exc:  # absurd nesting recurses
                problem = f"output: got text that is not JSON ({exc}); expected a JSON object"
        if problem is None:
            try:
                await run_in_threadpool(self._resolve, run_id, step_id, as_, who, note, output)
            except PracticeflowError as exc:
                problem = str(exc)
        if problem is not None:
            context = {"message": self.ctx.redactor.text(problem), "title": "Not resolved"}
            return self.page(request, "error.html", context, 409)
        if self.ctx.settled is not None:
            self.ctx.settled.set()
        if self.ctx.wake is not None:
            self.ctx.wake.set()
        query = urlencode({"resolved": step_id, "as": as_})
        return RedirectResponse(f"{PREFIX}/runs/{run_id}?{query}", 303)

    def _resolve(
        self, run_id: str, step_id: str, as_: Any, who: str, note: str, output: Any
    ) -> None:
        # The same operation as ``practiceflow runs resolve``: check the run, then settle.
        store = self.ctx.store
        run = find_run(store, run_id)
        if run is None:
            message = f"no run {run_id!r} in the state store; see 'practiceflow runs list'"
            raise PracticeflowError(message)
        store.resolve_step(run.run_id, step_id, as_, who, note, output=output)

    async def api_index(self, request: Request) -> Response:
        del request
        routes = ["recipes", "runs", "runs/{run_id}", "attention", "budget"]
        return JSONResponse({"routes": [f"{PREFIX}/api/{route}" for route in routes]})

    async def api_recipes(self, request: Request) -> Response:
        del request
        return JSONResponse(await self._data(recipes_view))

    async def api_runs(self, request: Request) -> Response:
        query = request.query_params
        recipe, status, day, problems = parse_filters(
            query.get("recipe"), query.get("status"), query.get("date")
        )
        if problems:
            return JSONResponse({"error": "; ".join(problems)}, 400)
        return JSONResponse(await self._data(runs_view, recipe=recipe, status=status, day=day))

    async def api_run(self, request: Request) -> Response:
        data, refused = await self._run(request, str(request.path_params["run_id"]))
        return refused or JSONResponse(data)

    async def api_attention(self, request: Request) -> Response:
        del request
        return JSONResponse(await self._data(attention_view))

    async def api_budget(self, request: Request) -> Response:
        del request
        return JSONResponse(await self._data(budget_view))


def create_app(
    ctx: ConsoleContext, guard: Guard | None = None, extra: Sequence[BaseRoute] = ()
) -> Starlette:
    """Build the console application."""
    console = _Console(ctx, guard or Guard())
    g = console.guarded
    step = PREFIX + "/runs/{run_id}/steps/{step_id}/resolve"
    routes = [
        Route(PREFIX, lambda request: RedirectResponse(PREFIX + "/", 307)),
        Route(PREFIX + "/", g(console.home)),
        Route(PREFIX + "/static/console.css", g(console.css_file)),
        Route(PREFIX + "/runs", g(console.runs)),
        Route(PREFIX + "/runs/{run_id}", g(console.run)),
        Route(PREFIX + "/attention", g(console.attention)),
        Route(PREFIX + "/attention/{entry_id}/settle", g(console.settle), methods=["POST"]),
        Route(PREFIX + "/budget", g(console.budget)),
        Route(step, g(console.confirm), methods=["GET"]),
        Route(step, g(console.resolve), methods=["POST"]),
        Route(PREFIX + "/api/", g(console.api_index)),
        Route(PREFIX + "/api/recipes", g(console.api_recipes)),
        Route(PREFIX + "/api/runs", g(console.api_runs)),
        Route(PREFIX + "/api/runs/{run_id}", g(console.api_run)),
        Route(PREFIX + "/api/attention", g(console.api_attention)),
        Route(PREFIX + "/api/budget", g(console.api_budget)),
        *extra,
    ]
    return Starlette(routes=routes)
