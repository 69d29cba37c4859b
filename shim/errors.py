"""The one translation of rackcron's errors into gRPC status codes.

Each :class:`~rackcron.errors.RackcronError` carries its code name (docs/spec/SEMANTICS.md
"Error codes"), which is a ``grpc.StatusCode`` name, and a message naming the
field. Anything else raised while serving an RPC is a bug or an outage: the
caller gets INTERNAL with a correlation id, and the log gets the traceback under
the same id. No traceback or driver text ever reaches the caller.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from rackcron.errors import RackcronError, StoreError
from rackcron.logs import LOGGER
from rackcron.wire.convert import check_strings

__all__ = ["rpc_method", "rpc_method_with_context", "status_of"]

S = TypeVar("S")
R = TypeVar("R")

#: A status message travels in a header, percent-encoded (up to 3 bytes per UTF-8 byte),
#: and gRPC turns a status whose headers pass 8 KiB into RESOURCE_EXHAUSTED: a message
#: echoing a long value is cut to this many UTF-8 bytes.
MAX_MESSAGE_BYTES = 2048


def _bounded(message: str) -> str:
    encoded = message.encode()
    if len(encoded) <= MAX_MESSAGE_BYTES:
        return message
    return encoded[: MAX_MESSAGE_BYTES - 3].decode(errors="ignore") + "…"


def status_of(exc: BaseException, rpc: str) -> tuple[grpc.StatusCode, str]:
    """The status code and message an RPC that raised ``exc`` returns (logging what is ours to fix)."""
    if isinstance(exc, RackcronError) and not isinstance(exc, StoreError):
        return grpc.StatusCode[exc.code], _bounded(exc.message)
    correlation = uuid.uuid4().hex[:16]
    what = "database error" if isinstance(exc, StoreError) else "internal error"
    LOGGER.error(
        "rpc failed",
        exc_info=exc,
        extra={"fields": {"rpc": rpc, "correlation_id": correlation, "error": str(exc)}},
    )
    return grpc.StatusCode.INTERNAL, f"{what} (correlation id {correlation})"


def rpc_method(handler: Callable[[S, Any], R]) -> Callable[[S, Any, grpc.ServicerContext], R]:
    """Make ``handler(self, request)`` a servicer method: strings checked, errors as statuses."""
    return _serving(handler, lambda self, request, _context: handler(self, request))


def rpc_method_with_context(
    handler: Callable[[S, Any, grpc.ServicerContext], R],
) -> Callable[[S, Any, grpc.ServicerContext], R]:
    """:func:`rpc_method` for a handler that also reads its call's context (the metadata
    and peer the audit trail records): ``handler(self, request, context)``."""
    return _serving(handler, handler)


def _serving(
    original: Callable[..., R], handler: Callable[[S, Any, grpc.ServicerContext], R]
) -> Callable[[S, Any, grpc.ServicerContext], R]:
    """``handler`` as the servicer method ``original`` names (its name and docstring)."""
    name = original.__name__

    @functools.wraps(original)
    def call(self: S, request: Any, context: grpc.ServicerContext) -> R:
        try:
            check_strings(request)
            return handler(self, request, context)
        except Exception as exc:  # the one place an RPC's errors become statuses
            code, message = status_of(exc, name)
        context.abort(code, message)

    return call
