"""The console's starlette application: pages under ``/console/``, JSON under ``/console/api/``.

Server-rendered Jinja (autoescaped, no JavaScript) with resolve and settle forms that do what
``practiceflow runs resolve`` and ``attention settle`` do; every POST carries a CSRF token
(:mod:`.security`); every response is built from :mod:`.data`, which masks.
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
from practiceflow.console.security import CSRF_FIELD, SESSION_COOKIE, TOKEN_COOKIE, Guard
from practiceflow.errors import PracticeflowError
from practiceflow.service.needs_person import settle
from practiceflow.state import RESOLUTIONS, RUN_STATUSES
from practiceflow.state.runids import AmbiguousRunId, find_run

#: Where the console lives in the URL space of ``serve``.
PREFIX = "/console"
_MAX_FORM = 64 * 1024
Handler = Callable[[Request], Awaitable[Response]]


class _Console:
    """The handlers, bound to one context and guard."""

    def __init__(self, ctx: ConsoleContext, guard: Guard) -> None:
        self.ctx = ctx
        self.guard = guard
        self.env = Environment(
            loader=PackageLoader("practiceflow.console", "templates"),
            autoescape=select_autoescape(["html"]),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)
        self.env.filters["or_not_recorded"] = lambda value: (
            "not recorded" if value is None else value
        )
        templates = resources.files("practiceflow.console") / "templates"
        self.css = (templates / "console.css").read_text(encoding="utf-8")

    def guarded(self, handler: Handler) -> Handler:
        """Check the token, keep the token out of URLs, give each visitor a session."""

        async def wrapped(request: Request) -> Response:
            if not self.guard.allowed(request):
                hint = ": open the console with ?token=..."
                return self._error(request, "a console token is required", 401, page_extra=hint)
            if self.guard.token and "token" in request.query_params:
                rest = {k: v for k, v in request.query_params.items() if k != "token"}
                target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
                return _with_cookie(RedirectResponse(target, 303), TOKEN_COOKIE, self.guard.token)
            self.ctx.refresh_secrets()
            session = Guard.session_of(request)
            request.state.session = session or Guard.new_session()  # forms' CSRF tokens use it
            response = await handler(request)
            if session is None:
                _with_cookie(response, SESSION_COOKIE, request.state.session)
            response.headers.setdefault("Cache-Control", "no-store")
            response.headers.setdefault("X-Frame-Options", "DENY")
            response.headers.setdefault("Referrer-Policy", "no-referrer")
            return response

        return wrapped

    async def _form(
        self, request: Request, purpose: str, refusal: str
    ) -> tuple[dict[str, str], Response | None]:
        """The POSTed form's fields (the last value of each), or the response refusing it:
        too large, or without a valid CSRF token for ``purpose`` (``refusal`` says what to do)."""
        raw = await request.body()
        if len(raw) > _MAX_FORM:
            return {}, self._error(request, "form too large", 413)
        form = {key: values[-1] for key, values in parse_qs(raw.decode("utf-8", "replace")).items()}
        if not self.guard.csrf_ok(request, purpose, form.get(CSRF_FIELD)):
            return form, self._error(request, refusal, 403, "Refused")
        return form, None

    async def _run(self, request: Request, run_id: str) -> tuple[Any, Response | None]:
        """The run's view, or the response saying it is ambiguous or missing."""
        try:
            data = await self._data(run_view, run_id)
        except AmbiguousRunId as exc:
            candidates = [run.run_id for run in exc.candidates]
            return None, self._error(request, str(exc), 409, "Which run?", candidates=candidates)
        if data is None:
            return None, self._error(request, _no_run(run_id), 404, "Not found")
        return data, None

    def _error(
        self,
        request: Request,
        message: str,
        status: int,
        title: str = "",
        page_extra: str = "",
        **extra: Any,
    ) -> Response:
        """An error: JSON under ``/api/``, else the error page (``page_extra`` ends its text)."""
        if request.url.path.startswith(PREFIX + "/api/"):
            return JSONResponse({"error": message, **extra}, status)
        context = {"message": message + page_extra, "title": title}
        return self.page(request, "error.html", context, status)

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
        recipe, status, day, problems = parse_filters(query)
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
        refusal = "this form has no valid CSRF token; open 'Needs attention' again"
        form, refused = await self._form(request, f"settle:{entry_id}", refusal)
        if refused is not None:
            return refused
        note = form.get("note", "").strip()
        problem = None if note else "note: say what you checked (it is kept with the entry)"
        if problem is None:
            problem = await self._act(self._settle, entry_id, self._who(form), note)
        if problem is not None:
            return self._error(request, self.ctx.redactor.text(problem), 409, "Not settled")
        return RedirectResponse(f"{PREFIX}/attention?{urlencode({'settled': entry_id})}", 303)

    def _who(self, form: dict[str, str]) -> str:
        return form.get("who", "").strip() or self.ctx.who

    async def _act(self, func: Callable[..., None], *args: Any) -> str | None:
        """Run a store write off the event loop; the refusal's text, or None when done."""
        try:
            await run_in_threadpool(func, *args)
        except PracticeflowError as exc:
            return str(exc)
        return None

    def _settle(self, entry_id: str, who: str, note: str) -> None:
        entry = self.ctx.store.get_attention(entry_id)
        if entry is None or entry.practice != self.ctx.practice:
            message = f"no attention entry {entry_id!r}; see 'practiceflow attention list'"
            raise PracticeflowError(message)
        settle(self.ctx.store, entry, who, note)

    async def budget(self, request: Request) -> Response:
        data = await self._data(budget_view)
        limits = data["limits"]
        per_day = (data["forecast"] or {}).get("per_day")
        charts = {}
        if data["per_hour"] is not None:
            for name, title, buckets, tick in _CHARTS:
                charts[name] = chart.bar_chart(
                    title,
                    data[f"per_{name}"],
                    limits[f"per_{name}"],
                    forecast=None if per_day is None else per_day / buckets,
                    tick_every=tick,
                )
            charts["day"] = chart.day_gauge(data["last_day"], limits["per_day"], per_day)
        context = {"title": "Budget", "budget": data, "charts": charts}
        return self.page(request, "budget.html", context)

    async def confirm(self, request: Request) -> Response:
        run_id = str(request.path_params["run_id"])
        step_id = str(request.path_params["step_id"])
        as_ = request.query_params.get("as", "")
        data, refused = await self._run(request, run_id)
        if refused is not None:
            return refused
        step = next((item for item in data["steps"] if item["step"] == step_id), None)
        problem = _bad_resolution(as_)
        if problem is None and step is None:
            problem = f"run {run_id} has no step {step_id!r}"
        elif problem is None and step is not None and not step["resolvable"]:
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
            "csrf": self.guard.csrf_token(session, f"resolve:{run_id}:{step_id}"),
        }
        return self.page(request, "confirm.html", context, 409 if problem else 200)

    async def resolve(self, request: Request) -> Response:
        run_id = str(request.path_params["run_id"])
        step_id = str(request.path_params["step_id"])
        refusal = (
            "this form has no valid CSRF token (it expired, or did not come from this "
            "console); open the step again and confirm from there"
        )
        form, refused = await self._form(request, f"resolve:{run_id}:{step_id}", refusal)
        if refused is not None:
            return refused
        as_ = form.get("as", "")
        output: Any = None
        problem = _bad_resolution(as_)
        if problem is None and form.get("output", "").strip() and as_ == "done":
            try:
                output = json.loads(form["output"])
            except (ValueError, RecursionError) as exc:  # absurd nesting recurses
                problem = f"output: got text that is not JSON ({exc}); expected a JSON object"
        if problem is None:
            args = (run_id, step_id, as_, self._who(form), form.get("note", ""), output)
            problem = await self._act(self._resolve, *args)
        if problem is not None:
            return self._error(request, self.ctx.redactor.text(problem), 409, "Not resolved")
        for event in (self.ctx.settled, self.ctx.wake):
            if event is not None:
                event.set()
        query = urlencode({"resolved": step_id, "as": as_})
        return RedirectResponse(f"{PREFIX}/runs/{run_id}?{query}", 303)

    def _resolve(
        self, run_id: str, step_id: str, as_: Any, who: str, note: str, output: Any
    ) -> None:
        # The same operation as ``practiceflow runs resolve``: check the run, then settle.
        store = self.ctx.store
        run = find_run(store, run_id)
        if run is None:
            raise PracticeflowError(_no_run(run_id))
        store.resolve_step(run.run_id, step_id, as_, who, note, output=output)

    async def api_index(self, request: Request) -> Response:
        del request
        routes = ["recipes", "runs", "runs/{run_id}", "attention", "budget"]
        return JSONResponse({"routes": [f"{PREFIX}/api/{route}" for route in routes]})

    def api_view(self, view: Callable[[ConsoleContext], Any]) -> Handler:
        """A JSON route returning one view as it is."""

        async def handler(request: Request) -> Response:
            del request
            return JSONResponse(await self._data(view))

        return handler

    async def api_runs(self, request: Request) -> Response:
        recipe, status, day, problems = parse_filters(request.query_params)
        if problems:
            return JSONResponse({"error": "; ".join(problems)}, 400)
        return JSONResponse(await self._data(runs_view, recipe=recipe, status=status, day=day))

    async def api_run(self, request: Request) -> Response:
        data, refused = await self._run(request, str(request.path_params["run_id"]))
        return refused or JSONResponse(data)


#: The budget page's bar charts: name, title, buckets a day, a tick every so many bars.
_CHARTS = (
    ("hour", "requests per hour, last 24 hours", 24, 3),
    ("minute", "requests per minute, last hour", 1440, 10),
)


def _with_cookie(response: Response, name: str, value: str) -> Response:
    response.set_cookie(name, value, httponly=True, samesite="strict", path=PREFIX)
    return response


def _no_run(run_id: str) -> str:
    return f"no run {run_id!r} in the state store; see 'practiceflow runs list'"


def _bad_resolution(as_: str) -> str | None:
    return None if as_ in RESOLUTIONS else f"as: got {as_!r}; valid values are {list(RESOLUTIONS)}"


def create_app(
    ctx: ConsoleContext, guard: Guard | None = None, extra: Sequence[BaseRoute] = ()
) -> Starlette:
    """Build the console application."""
    console = _Console(ctx, guard or Guard())
    step = "/runs/{run_id}/steps/{step_id}/resolve"
    guarded: list[tuple[str, Handler, list[str] | None]] = [
        ("/", console.home, None),
        ("/static/console.css", console.css_file, None),
        ("/runs", console.runs, None),
        ("/runs/{run_id}", console.run, None),
        ("/attention", console.attention, None),
        ("/attention/{entry_id}/settle", console.settle, ["POST"]),
        ("/budget", console.budget, None),
        (step, console.confirm, ["GET"]),
        (step, console.resolve, ["POST"]),
        ("/api/", console.api_index, None),
        ("/api/recipes", console.api_view(recipes_view), None),
        ("/api/runs", console.api_runs, None),
        ("/api/runs/{run_id}", console.api_run, None),
        ("/api/attention", console.api_view(attention_view), None),
        ("/api/budget", console.api_view(budget_view), None),
    ]
    routes = [
        Route(PREFIX, lambda request: RedirectResponse(PREFIX + "/", 307)),
        *(Route(PREFIX + path, console.guarded(h), methods=m) for path, h, m in guarded),
        *extra,
    ]
    return Starlette(routes=routes)
