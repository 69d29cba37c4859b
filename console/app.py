"""The console's WSGI application: read-only pages over the service, rendered server-side.

Routes (GET unless said): ``/`` the overview (failures first; ``/?window=...``, an old
link to the timeline, redirects there), ``/timeline``, ``/schedules`` and ``/schedules/<id>``,
``/tasks`` (``?fragment=rows`` for the live refresh), ``/history``, ``/login`` (GET, POST),
``/logout`` (POST), ``/static/<file>``. Anything that is not a page (``/metrics``,
``/healthz``, ...) goes to ``fallback``, behind the same gate.

Every value from the store reaches a page through Jinja2's HTML auto-escaping, after
:func:`rackcron.domain.escape.terminal` has made its control and invisible characters visible
(the environment's ``finalize``); templates never mark data safe. Responses carry a
Content-Security-Policy that allows only the console's own script and style files.
"""

from __future__ import annotations

import dataclasses
import html
import logging
import re
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from rackcron.console import overview, rollout_view, schedule_list, timeline, timeline_query
from rackcron.console.auth import Gate, Throttled
from rackcron.console.spec_words import spec_words
from rackcron.domain import escape, timing
from rackcron.domain.lifecycle import TaskStatus
from rackcron.domain.models import Schedule
from rackcron.domain.names import AmbiguousName, Candidate, as_uuid, rack_candidate, resolve
from rackcron.domain.operation_names import spoken_name
from rackcron.domain.rollouts import RolloutState
from rackcron.domain.upcoming import MAX_FIRES_PER_SCHEDULE, upcoming
from rackcron.errors import InvalidArgument, NotFound, RackcronError, StoreError
from rackcron.history import HEADERS, KINDS, document, entry_at, rows
from rackcron.logs import event
from rackcron.service.roles import ReadModel

__all__ = ["console_app"]


Start = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], Start], Iterable[bytes]]

#: The timeline's parameters: ``/`` with one of them is an old link to the timeline.
_TIMELINE_PARAMS = frozenset({"window", "hours", "start", "by"})
NEXT_FIRES = 10
TASK_PAGE = 100
HISTORY_PAGE = 100
#: The deepest page of the history (each page reads every kind's newest entries up to
#: it: ``rackcron history --limit 0`` has them all).
HISTORY_PAGES = 100

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_STATIC = {"console.css": "text/css; charset=utf-8", "live.js": "text/javascript; charset=utf-8"}
_SCHEDULE_PATH = re.compile(r"/schedules/([0-9a-fA-F-]{36})")
_ROLLOUT_PATH = re.compile(r"/rollouts/([0-9a-fA-F-]{36})")
#: Roll-outs the roll-outs page lists, newest first.
ROLLOUT_PAGE = 100
MAX_FORM = 4096  # bytes of a sign-in form
MAX_FIELDS = 20  # query parameters of a page
# What a redirect may keep as is: RFC 3986's unreserved and reserved characters and "%";
# anything else (a control character, a space, a backslash, non-ASCII) is percent-encoded,
# so a Location header can never end early nor name another host once a browser strips it.
_URL_SAFE = "/?#[]@!$&'()*+,;=:%-._~"


_PLAIN = (int, float, uuid.UUID)  # nothing in their text to escape


def _finalize(value: Any) -> Any:
    if type(value) in _PLAIN:  # a page draws tens of thousands
        return value
    if isinstance(value, Markup) or value is None:
        return "" if value is None else value
    return escape.terminal(str(value), multiline=True)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rackcron.console", "templates"),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["utc"] = lambda at: timing.format_rfc3339(at) if at is not None else ""
    return env


@dataclass(frozen=True, slots=True)
class _Response:
    status: str
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


class _Console:
    def __init__(
        self,
        service: ReadModel,
        gate: Gate,
        fallback: WSGIApp | None,
        clock: Callable[[], datetime],
        refusal: str | None,
    ) -> None:
        self.service, self.gate, self.fallback, self.clock = service, gate, fallback, clock
        self.refusal = refusal
        self.env = _environment()

    # --- the WSGI entry -------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start: Start) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        if path == "/healthz" and self.fallback is not None:  # probes need no token
            return self.fallback(environ, start)
        is_page = (
            path in _PAGES
            or bool(_SCHEDULE_PATH.fullmatch(path))
            or bool(_ROLLOUT_PATH.fullmatch(path))
        )
        if self.refusal is not None and (is_page or path in ("/login", "/logout")):
            return self._send(start, _plain("403 Forbidden", self.refusal))
        if path.startswith("/static/"):
            return self._send(start, self._static(path.removeprefix("/static/")))
        if path == "/login":
            return self._send(start, self._login(environ, method))
        try:
            who = self.gate.who(environ)
        except Throttled as exc:
            return self._send(start, _throttled(exc))
        if who is None:
            live = "fragment=" in environ.get("QUERY_STRING", "")  # the script's refreshes
            if (is_page and not live) or path == "/logout":
                return self._send(start, _redirect("/login?next=" + urllib.parse.quote(path)))
            challenge = ("WWW-Authenticate", "Bearer")
            answer = _plain("401 Unauthorized", "a bearer token is needed", (challenge,))
            return self._send(start, answer)
        if path == "/logout" and method == "POST":
            return self._send(start, _redirect("/login", cookie=self.gate.logout(environ)))
        page = _PAGES.get(path)
        match = _SCHEDULE_PATH.fullmatch(path)
        rolled = _ROLLOUT_PATH.fullmatch(path)
        if page is None and match is None and rolled is None:
            if self.fallback is not None:
                return self.fallback(environ, start)
            return self._send(start, self._error("404 Not Found", f"no page at {path}"))
        if method not in ("GET", "HEAD"):
            return self._send(
                start, self._error("405 Method Not Allowed", "the console is read-only")
            )
        try:
            params = _query(environ)
            if match is not None:
                response = self._schedule(match.group(1))
            elif rolled is not None:
                response = self._rollout(rolled.group(1))
            else:
                assert page is not None
                response = page(self, params)
        except (InvalidArgument, NotFound) as exc:
            status = "404 Not Found" if isinstance(exc, NotFound) else "400 Bad Request"
            message = exc.message
            if isinstance(exc, AmbiguousName):
                message += ": " + "; ".join(f"{c.id} ({c.detail})" for c in exc.candidates)
            response = self._error(status, message)
        except StoreError as exc:  # say so, keep serving; the details are the log's
            correlation = uuid.uuid4().hex[:16]
            event(
                logging.WARNING,
                "console page failed",
                path=path,
                correlation_id=correlation,
                error=exc.message,
            )
            message = (
                "the store cannot be read now"
                f" (correlation id {correlation}: the server's log has the details)"
            )
            response = self._error("503 Service Unavailable", message)
        except RackcronError as exc:
            response = self._error("400 Bad Request", exc.message)
        return self._send(start, response, head=method == "HEAD")

    def _send(self, start: Start, response: _Response, *, head: bool = False) -> Iterable[bytes]:
        headers = [
            ("Content-Type", response.content_type),
            ("Content-Length", str(len(response.body))),
            ("Content-Security-Policy", _CSP),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            ("Cache-Control", "no-store"),
            *response.headers,
        ]
        start(response.status, headers)
        return [] if head else [response.body]

    def _render(self, template: str, status: str = "200 OK", /, **context: Any) -> _Response:
        body = self.env.get_template(template).render(
            login=not self.gate.open, now=self.clock(), **context
        )
        return _Response(status, body.encode())

    def _error(self, status: str, message: str) -> _Response:
        return self._render("error.html", status, title=status, message=message)

    def _static(self, name: str) -> _Response:
        if name not in _STATIC:
            return _plain("404 Not Found", "not found")
        body = resources.files("rackcron.console").joinpath("static", name).read_bytes()
        return _Response("200 OK", body, _STATIC[name], (("Cache-Control", "max-age=300"),))

    def _login(self, environ: dict[str, Any], method: str) -> _Response:
        try:
            target = _local_path(_query(environ).get("next", "/"))
        except InvalidArgument as exc:
            return self._error("400 Bad Request", exc.message)
        if self.gate.open:
            return _redirect(target)
        if method != "POST":
            return self._render(
                "login.html", title="Sign in", target=target, failed=False, signing_in=True
            )
        length = environ.get("CONTENT_LENGTH") or "0"
        if not re.fullmatch(r"[0-9]{1,9}", length):  # "-1" would read to the end of the stream
            return self._error("400 Bad Request", "the form needs a Content-Length")
        if int(length) > MAX_FORM:
            return self._error(
                "413 Content Too Large", f"a sign-in form is at most {MAX_FORM} bytes"
            )
        body = environ["wsgi.input"].read(int(length)).decode("utf-8", "replace")
        try:
            token = urllib.parse.parse_qs(body, max_num_fields=MAX_FIELDS).get("token", [""])[-1]
        except ValueError:
            return self._error("400 Bad Request", f"at most {MAX_FIELDS} form fields")
        try:
            cookie = self.gate.login(environ, token)
        except Throttled as exc:
            return _throttled(exc, page=self._error("429 Too Many Requests", str(exc)))
        if cookie is None:
            return self._render(
                "login.html",
                "401 Unauthorized",
                title="Sign in",
                target=target,
                failed=True,
                signing_in=True,
            )
        return _redirect(target, cookie=cookie)

    # --- pages --------------------------------------------------------------------------

    def overview(self, params: Mapping[str, str]) -> _Response:
        if params.keys() & _TIMELINE_PARAMS:  # a link from before the timeline moved
            return _redirect("/timeline?" + urllib.parse.urlencode(params))
        with self.service.transaction(write=False) as ops:
            view = overview.read(ops)
        return self._render("overview.html", title="Overview", view=view)

    def timeline(self, params: Mapping[str, str]) -> _Response:
        query = timeline_query.parse(params)
        now = self.clock()
        start, end = query.span(now)
        view = self.service.fleet_view()
        racks = {r.id: r for r in view.racks if query.keeps_rack(r)}
        found = upcoming(view, start, end, racks=racks if query.rack or query.rack_label else None)
        by_schedule = {s.id: s for s in view.schedules}
        running = list(view.rollouts)
        if query.schedules_filtered:
            kept = {s.id for s in view.schedules if query.keeps_schedule(s)} | {
                r.schedule_id
                for r in view.rollouts
                if r.schedule_id not in by_schedule and query.keeps_rollout(r)
            }
            found = dataclasses.replace(
                found, bars=tuple(b for b in found.bars if b.schedule_id in kept)
            )
            running = [r for r in running if r.schedule_id in kept]
        if query.by == "rack":
            labels = {str(i): r.labels for i, r in racks.items()}
        else:
            labels = {str(i): s.management.labels for i, s in by_schedule.items()}
        group_of = (lambda key: labels.get(key, {}).get(query.group, "")) if query.group else None
        every_rack = query.by == "rack" and not query.schedules_filtered
        picture = timeline.draw(
            found,
            now,
            query.zone,
            by=query.by,
            racks={i: r.name for i, r in racks.items()} if every_rack else None,
            group_of=group_of,
            page=query.page,
            zone_name=query.tz,
        )
        context = dict(
            query=query,
            picture=picture,
            start=start,
            end=end,
            bars=len(found.bars),
            conflicts=sum(1 for b in found.bars if b.conflicts_with),
            held=sum(1 for b in found.bars if b.freeze),
            legend=[(spoken_name(n), c) for n, c in timeline.COLOURS.items()],
            max_fires=MAX_FIRES_PER_SCHEDULE,
            rows_page=timeline.ROWS_PAGE,
            running=running,
        )
        if params.get("fragment") == "chart":
            return self._render("timeline_live.html", **context)
        live = query.link() + ("&" if "?" in query.link() else "?") + "fragment=chart"
        operations = [(n, spoken_name(n)) for n in timeline.COLOURS]
        return self._render(
            "timeline.html", title="Timeline", live=live, operations=operations, **context
        )

    def schedules(self, params: Mapping[str, str]) -> _Response:
        sort = params.get("sort", "name")
        if sort not in schedule_list.SORTS:
            raise InvalidArgument(f"sort: one of {', '.join(schedule_list.SORTS)}, not {sort!r}")
        number = _int(params.get("page", "1"), "page", 1, 1_000_000)
        wanted = _Filters.of(params)
        with self.service.transaction(write=False) as ops:
            schedules = ops.schedules.list_schedules().items
            scopes = ops.scopes.scopes_by_schedule()
            racks = {r.id: r.name for r in ops.inventory.list_racks()}
            named = {}
            for s in schedules:
                names = sorted(
                    racks.get(sc.rack_id, str(sc.rack_id)) for sc in scopes.get(s.id, [])
                )
                if wanted.keeps(s, names):
                    named[s.id] = names
            kept = [s for s in schedules if s.id in named]
            every = sort in schedule_list.NEEDS_RESULTS
            results = ops.tasks.last_results([s.id for s in kept]) if every else {}
            page = schedule_list.page_of(schedule_list.order(kept, sort, results), number)
            if not every:
                results = ops.tasks.last_results([s.id for s in page.items])
        shown = schedule_list.RACKS_SHOWN
        rows = [
            (s, named[s.id][:shown], len(named[s.id]) - shown, _state(s), results.get(s.id))
            for s in page.items
        ]
        query = {k: v for k, v in params.items() if k != "page" and v}
        return self._render(
            "schedules.html",
            title="Schedules",
            rows=rows,
            kept=len(kept),
            page=page,
            sort=sort,
            sorts=schedule_list.SORTS,
            query=urllib.parse.urlencode(query),
            filters=wanted,
            total=len(schedules),
            words=spec_words,
        )

    def _schedule(self, schedule_id: str) -> _Response:
        with self.service.transaction(write=False) as ops:
            schedule = ops.schedules.get_schedule(schedule_id)
            scopes = ops.scopes.list_scopes(schedule.id)
            racks = {r.id: r.name for r in ops.inventory.list_racks()}
            tasks = ops.tasks.list_tasks(schedule_id=schedule.id, limit=20).items
            applied = ops.applies.get_apply(schedule.applied_by) if schedule.applied_by else None
            recent = ops.rollouts.list_rollouts(schedule_id=schedule.id, limit=5)
        fires = _next_fires(schedule, NEXT_FIRES)
        return self._render(
            "schedule.html",
            title=schedule.name,
            schedule=schedule,
            scopes=scopes,
            racks=racks,
            tasks=tasks,
            fires=fires,
            applied=applied,
            words=spec_words(schedule.spec_type, schedule.spec, schedule.timezone),
            state=_state(schedule),
            rollouts=[(r, rollout_view.progress(r)) for r in recent],
        )

    def _rollout(self, rollout_id: str) -> _Response:
        with self.service.transaction(write=False) as ops:
            record = ops.rollouts.get_rollout(rollout_id)
        failures = [s for s in record.scopes if s.stage == "failed"]
        held: dict[str, list[str]] = {}  # why -> the racks held so, in order
        for s in record.scopes:
            if s.stage == "waiting" and s.reason:
                held.setdefault(s.reason, []).append(s.rack_name)
        return self._render(
            "rollout.html",
            title=f"Roll-out of {record.schedule_name}",
            nav="Roll-outs",
            record=record,
            waves=rollout_view.waves(record),
            stages=rollout_view.STAGES,
            failures=failures,
            held=held,
        )

    def rollouts(self, params: Mapping[str, str]) -> _Response:
        state = params.get("state", "")
        with self.service.transaction(write=False) as ops:
            found = ops.rollouts.list_rollouts(states=[state] if state else [], limit=ROLLOUT_PAGE)
        # Failures first: those waiting on an operator, then the rest as they came.
        stopped = [r for r in found if r.state in ("halted", "paused")]
        listed = stopped + [r for r in found if r.state not in ("halted", "paused")]
        return self._render(
            "rollouts.html",
            title="Roll-outs",
            listed=[(r, rollout_view.progress(r)) for r in listed],
            state=state,
            states=[s.value for s in RolloutState],
            stages=rollout_view.STAGES,
        )

    def tasks(self, params: Mapping[str, str]) -> _Response:
        with self.service.transaction(write=False) as ops:
            inventory = ops.inventory.list_racks()
            racks = {r.id: r.name for r in inventory}
            schedules = {s.id: s.name for s in ops.schedules.list_schedules().items}
            rack_id = _named(params.get("rack", ""), map(rack_candidate, inventory), "rack")
            candidates = (Candidate(k, v) for k, v in schedules.items())
            schedule_id = _named(params.get("schedule", ""), candidates, "schedule")
            status = params.get("status", "")
            statuses = [_status(status)] if status else []
            page = ops.tasks.list_tasks(
                rack_id=rack_id, schedule_id=schedule_id, statuses=statuses, limit=TASK_PAGE
            )
        context: dict[str, Any] = dict(
            tasks=page.items,
            total=page.total,
            racks=racks,
            schedules=schedules,
            rack=params.get("rack", ""),
            schedule=params.get("schedule", ""),
            status=status,
            statuses=[s.value for s in TaskStatus],
        )
        if params.get("fragment") == "rows":
            return self._render("task_rows.html", **context)
        query = urllib.parse.urlencode({k: v for k, v in params.items() if k != "fragment"})
        return self._render("tasks.html", title="Tasks", query=query, **context)

    def history(self, params: Mapping[str, str]) -> _Response:
        kind, schedule = params.get("kind", ""), params.get("schedule", "")
        if kind and kind not in KINDS:
            raise InvalidArgument(f"kind: one of {', '.join(KINDS)}, not {kind!r}")
        schedule_id = as_uuid(schedule) if schedule else None
        if schedule and schedule_id is None:  # a name: of a schedule the store has now
            with self.service.transaction(write=False) as ops:
                listed = ops.schedules.list_schedules().items
            schedule_id = _named(schedule, (Candidate(s.id, s.name) for s in listed), "schedule")
        number = _int(params.get("page", "1"), "page", 1, HISTORY_PAGES)
        until = _until(params.get("until", ""))
        kinds = (kind,) if kind else KINDS
        if until is None and number > 1:  # a page reached without a link: from the newest
            until = next((entry_at(e) for e in self.service.history(1, kinds=kinds,
                          schedule_id=schedule_id)), None)  # fmt: skip
        entries = self.service.history(
            limit=HISTORY_PAGE + 1,  # one more: whether there is an older page
            kinds=kinds,
            schedule_id=schedule_id,
            offset=(number - 1) * HISTORY_PAGE,
            until=until,
        )
        if until is None and entries:  # the links keep to what the first page showed
            until = entry_at(entries[0])
        shown = entries[:HISTORY_PAGE]
        data = document(shown)
        kept = {
            "kind": kind,
            "schedule": schedule,
            "until": timing.format_rfc3339(until) if until else "",
        }
        return self._render(
            "history.html",
            title="History",
            headers=HEADERS,
            rows=list(zip((e["type"] for e in data["entries"]), rows(data), strict=True)),
            kinds=KINDS,
            kind=kind,
            schedule=schedule,
            page=HISTORY_PAGE,
            number=number,
            first=(number - 1) * HISTORY_PAGE + 1,
            older=len(entries) > HISTORY_PAGE and number < HISTORY_PAGES,
            query=urllib.parse.urlencode({k: v for k, v in kept.items() if v}),
        )


_PAGES: dict[str, Callable[[_Console, Mapping[str, str]], _Response]] = {
    "/": _Console.overview,
    "/timeline": _Console.timeline,
    "/schedules": _Console.schedules,
    "/tasks": _Console.tasks,
    "/rollouts": _Console.rollouts,
    "/history": _Console.history,
}


@dataclass(frozen=True, slots=True)
class _Filters:
    name: str = ""
    label: str = ""
    rack: str = ""
    enabled: str = ""  # "", "yes", "no"
    owner: str = ""

    @classmethod
    def of(cls, params: Mapping[str, str]) -> _Filters:
        return cls(
            *(params.get(k, "").strip() for k in ("name", "label", "rack", "enabled", "owner"))
        )

    def keeps(self, schedule: Schedule, racks: list[str]) -> bool:
        if self.name and self.name.lower() not in schedule.name.lower():
            return False
        if self.label:
            key, _, value = self.label.partition("=")
            labels = schedule.management.labels
            if key not in labels or (value and labels[key] != value):
                return False
        if self.rack and self.rack not in racks:
            return False
        if self.enabled and (self.enabled == "yes") != schedule.enabled:
            return False
        return not self.owner or (schedule.management.owner or "") == self.owner


def _state(schedule: Schedule) -> str:
    if schedule.consumed:
        return "consumed"
    if not schedule.enabled:
        return "paused"
    miss = schedule.last_miss
    if miss is not None and (schedule.last_run_at is None or miss.at >= schedule.last_run_at):
        if miss.reason.value == "freeze":
            return f"held by freeze {miss.detail}" if miss.detail else "held by a freeze"
        return f"missed ({miss.reason.value})"
    return "enabled"


def _next_fires(schedule: Schedule, count: int) -> list[tuple[datetime, datetime]]:
    """The next ``count`` fire times, in UTC and in the schedule's zone."""
    if not schedule.enabled or schedule.next_run_at is None:
        return []
    spec = timing.parse_spec(schedule.spec_type, schedule.spec, schedule.timezone or "UTC")
    found: list[tuple[datetime, datetime]] = []
    at: datetime | None = schedule.next_run_at
    while at is not None and len(found) < count:
        found.append((at, timing.describe_local(spec, at)))
        at = timing.next_after(spec, at)
    return found


def _query(environ: Mapping[str, Any]) -> dict[str, str]:
    """The query's parameters, the last of each name. :raises InvalidArgument: too many."""
    try:
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""), max_num_fields=MAX_FIELDS)
    except ValueError:
        raise InvalidArgument(f"at most {MAX_FIELDS} query parameters") from None
    return {k: v[-1] for k, v in query.items()}


def _until(text: str) -> datetime | None:
    """A history page's ``until``: its first page's newest entry (None: the first page)."""
    if not text:
        return None
    try:
        return timing.parse_rfc3339(text)
    except ValueError as exc:
        raise InvalidArgument(f"until: {exc}") from None


def _int(text: str, field: str, low: int, high: int) -> int:
    if not re.fullmatch(r"[0-9]{1,6}", text) or not low <= int(text) <= high:
        raise InvalidArgument(f"{field}: a whole number from {low} to {high}, got {text!r}")
    return int(text)


def _named(text: str, candidates: Iterable[Candidate], what: str) -> uuid.UUID | None:
    """A filter value: an id or a name, by the command line's rule (``rackcron.domain.names``:
    two racks of one name are ambiguous, not the first of them)."""
    return resolve(what, text, candidates) if text else None


def _status(text: str) -> TaskStatus:
    try:
        return TaskStatus(text)
    except ValueError:
        raise InvalidArgument(f"status: unknown task status {text!r}") from None


def _local_path(target: str) -> str:
    """A redirect target that stays on this server: a path, never a scheme or a host, with
    every character a browser would drop or a header would end at percent-encoded."""
    if not target.startswith("/") or target[1:2] in ("/", "\\"):
        return "/"
    return urllib.parse.quote(target, safe=_URL_SAFE)


def _plain(status: str, line: str, headers: tuple[tuple[str, str], ...] = ()) -> _Response:
    """A plain-text answer of one ``line``."""
    return _Response(status, f"{line}\n".encode(), "text/plain; charset=utf-8", headers)


def _throttled(exc: Throttled, *, page: _Response | None = None) -> _Response:
    """The 429 answer: ``page`` (a plain-text line when None) with Retry-After."""
    retry = (("Retry-After", str(exc.retry_after)),)
    if page is None:
        return _plain("429 Too Many Requests", str(exc), retry)
    return dataclasses.replace(page, headers=page.headers + retry)


def _redirect(target: str, *, cookie: str | None = None) -> _Response:
    headers = [("Location", target)]
    if cookie is not None:
        headers.append(("Set-Cookie", cookie))
    body = f'<a href="{html.escape(target)}">continue</a>\n'.encode()
    return _Response("303 See Other", body, headers=tuple(headers))


def console_app(
    service: ReadModel,
    *,
    gate: Gate | None = None,
    fallback: WSGIApp | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    refusal: str | None = None,
) -> WSGIApp:
    """The console over ``service``; ``fallback`` serves every other path (``/metrics``,
    ``/healthz``), behind the same ``gate`` (default: open, for loopback). ``refusal``:
    the pages are not served, each answers 403 with this reason (``fallback`` still is)."""
    return _Console(service, gate or Gate(None), fallback, clock, refusal)
