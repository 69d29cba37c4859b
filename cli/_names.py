"""Names on the command line, in one place: what a SCHEDULE, ``--rack``, ``--schedule`` or
``--component`` value means, the names shown beside ids, and shell completion of names.

The rule is :mod:`rackcron.domain.names`'s (an id first, else the one object of that name,
else an error listing the candidates, or saying none has it). On the store the
service reads the candidates (a component is also named ``RACK/NAME`` there); over
``--server`` a schedule is looked up by id and then by name through ``v1.Flow``, and
a rack name through the server's inventory (``rackcron.v1.Reconciler``; a server
without it takes a rack's UUID only).

Completion (``shell_complete`` on those parameters) reads the store the command would
use, and only if it exists: it never creates one, never calls a server, and offers
nothing rather than fail, since whatever it raised would land in the user's shell; a
PostgreSQL store that does not answer is given :data:`COMPLETION_TIMEOUT` seconds.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.shell_completion import CompletionItem

from rackcron.domain.escape import terminal
from rackcron.domain.names import as_uuid, near_misses, rack_candidate, resolve
from rackcron.errors import FailedPrecondition, NotFound, RackcronError

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from rackcron.domain.models import Rack, Schedule
    from rackcron.service import Service
    from rackcron.wire.client import FlowClient

__all__ = [
    "beside",
    "complete_racks",
    "complete_schedules",
    "rack_names",
    "resolve_component",
    "resolve_rack",
    "resolve_schedule",
    "schedule_argument",
]

F = TypeVar("F", bound=Callable[..., Any])

COMPLETION_TIMEOUT = 2
#: A name a shell takes as one word, as typed: letters, digits and ``_.:@%+=,/-``, not
#: starting with ``~``, ``=`` or ``-`` (a path, an assignment, an option).
_SHELL_WORD = re.compile(r"(?![~=-])[\w.:@%+=,/-]+")


def beside(name: str | None, object_id: uuid.UUID) -> str:
    """A name with its id, for people (``rack-a01 (10e6e576-…)``); the id alone when the
    object has no name (it is gone). Not escaped: the caller escapes the line."""
    return f"{name} ({object_id})" if name else str(object_id)


def _local(backend: Service | FlowClient) -> TypeIs[Service]:
    from rackcron.service import Service  # not at the top: --help stays light

    return isinstance(backend, Service)


def resolve_schedule(backend: Service | FlowClient, ref: str) -> Schedule:
    """The schedule ``ref`` names: by id if it is a UUID one has, else by name.

    :raises NotFound: none has it (over ``--server``: a RemoteError, NOT_FOUND).
    """
    as_id = as_uuid(ref)
    if as_id is None:
        return backend.find_schedule(ref)
    try:
        return backend.get_schedule(as_id)
    except RackcronError as missing:
        if missing.code != "NOT_FOUND":
            raise
    # Not an id any schedule has: a name, then (its error says what was typed, where a
    # server's would say "GetTaskSchedule: NOT_FOUND: id: ...").
    return backend.find_schedule(ref)


def _server_racks(client: FlowClient) -> list[Rack]:
    from rackcron.reconciler.remote import RemoteStore  # grpc, only for a server

    return RemoteStore(client.channel).racks()


def resolve_rack(backend: Service | FlowClient, ref: str) -> uuid.UUID:
    """The id of the rack ``ref`` names.

    :raises AmbiguousName: several racks have that name.
    :raises NotFound: none has it.
    :raises FailedPrecondition: a name, over a server that cannot show its racks.
    """
    if _local(backend):
        return backend.resolve_rack(ref)
    as_id = as_uuid(ref)
    if as_id is not None:  # a server's inventory is read whole: not for an id
        return as_id
    try:
        racks = _server_racks(backend)
    except FailedPrecondition as exc:
        raise FailedPrecondition(f"rack {ref!r}: {exc.message}; give the rack's UUID") from None
    try:
        return resolve("rack", ref, [rack_candidate(r) for r in racks])
    except NotFound as missing:
        raise missing.suggesting(near_misses(ref, (r.name for r in racks))) from None


def resolve_component(service: Service, ref: str) -> uuid.UUID:
    """The id of the component ``ref`` names (its id, its name, or ``RACK/NAME``), in the
    store. :raises AmbiguousName: several have it. :raises NotFound: none has it."""
    return service.resolve_component(ref)


def rack_names(backend: Service | FlowClient, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The names of these racks (none for a rack that is gone, or over a server that
    cannot show its racks)."""
    if _local(backend):
        return backend.names_of(racks=ids).racks
    try:
        racks = _server_racks(backend)
    except FailedPrecondition:
        return {}
    wanted = set(ids)
    return {r.id: r.name for r in racks if r.id in wanted}


def _completion_service(ctx: click.Context) -> Service | None:
    """The store this command line would read, if it has one and names no server."""
    params = ctx.params
    if params.get("server"):
        return None
    from rackcron.service import Service
    from rackcron.store import default_database_url, missing_sqlite_file, open_engine

    url = params.get("database_url") or default_database_url()
    if missing_sqlite_file(url) is not None:
        return None
    return Service(open_engine(url, migrate=False, connect_timeout=COMPLETION_TIMEOUT))


def _complete(
    ctx: click.Context, incomplete: str, names: Callable[[Service], Iterable[tuple[str, str]]]
) -> list[CompletionItem]:
    try:
        service = _completion_service(ctx)
        if service is None:
            return []
        try:
            found = list(names(service))
        finally:
            service.close()
    except Exception:  # completion offers nothing rather than fail in a user's shell
        return []
    return [
        CompletionItem(name, help=terminal(about))
        for name, about in found
        # a name a shell could not take back as typed is not offered: a control character,
        # or one the shell reads (bash inserts a completion unquoted: `x;reboot`, `$(...)`)
        if name.startswith(incomplete) and _SHELL_WORD.fullmatch(name)
    ]


def complete_schedules(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The stored schedules' names (``shell_complete``)."""
    return _complete(
        ctx, incomplete, lambda s: ((x.name, x.description) for x in s.list_schedules().items)
    )


def _rack_items(service: Service) -> list[tuple[str, str]]:
    by_name: dict[str, list[Rack]] = {}
    for rack in service.list_racks():
        by_name.setdefault(rack.name, []).append(rack)
    return [
        (name, str(racks[0].id) if len(racks) == 1 else f"{len(racks)} racks: give an id")
        for name, racks in by_name.items()
    ]


def complete_racks(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The stored racks' names (``shell_complete``)."""
    return _complete(ctx, incomplete, _rack_items)


def schedule_argument(func: F) -> F:
    """The ``SCHEDULE`` argument (a name or an id), completed from the store."""
    return click.argument("schedule", shell_complete=complete_schedules)(func)
