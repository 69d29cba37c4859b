"""Structured logs for the daemons: one line per event, as ``key=value`` text or JSON.

Events go through the standard ``logging`` module (logger ``rackcron``), with their
fields in ``extra={"fields": {...}}``; :func:`configure` installs the formatter::

    2026-11-29T12:00:00.120Z INFO fired schedule=nightly-power-off submitted=4 skipped=1 lag=0.12s
    {"ts": "2026-11-29T12:00:00.120Z", "level": "INFO", "event": "fired", "schedule": ...}

A duration is logged as :class:`Seconds`: with its unit in text (``lag=1.247s``,
``retention=1209600s``: milliseconds at most, no trailing zeros), a number of seconds
in JSON (``"lag": 1.247``).

Field values are data (schedule names, controller answers, errors): in text, a
value is bare only when it holds nothing to misread (:func:`rackcron.domain.escape.logfmt_value`),
else a JSON string, so no value can add a line, a field or a terminal escape. JSON
lines are ``json.dumps`` with ASCII output: controls are escaped and a line stays one.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, Any, Literal

from rackcron.domain.escape import logfmt_value, terminal
from rackcron.errors import RackcronError

__all__ = ["LOGGER", "Seconds", "configure", "event", "failed"]

LOGGER = logging.getLogger("rackcron")


def event(level: int, name: str, **fields: Any) -> None:
    """Log event ``name`` with ``fields`` (skipped cheaply when the level is off)."""
    if LOGGER.isEnabledFor(level):
        LOGGER.log(level, name, extra={"fields": fields})


def failed(name: str, exc: Exception) -> str:
    """Log event ``name`` at ERROR for ``exc``, which ended a round of a daemon's loop: a
    :class:`~rackcron.errors.RackcronError` by its message, anything else (a bug) by its
    repr, with the traceback. Returns the error as logged."""
    if isinstance(exc, RackcronError):
        message, trace = exc.message, False
    else:
        message, trace = repr(exc), True
    LOGGER.error(name, exc_info=trace, extra={"fields": {"error": message}})
    return message


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Seconds(float):
    """A duration in seconds, as a log field: ``1.247s`` in text, ``1.247`` in JSON."""

    __slots__ = ()


def _text_value(value: Any) -> str:
    if isinstance(value, Seconds):
        return f"{value:.3f}".rstrip("0").rstrip(".") + "s"
    if isinstance(value, float):
        value = f"{value:.3f}"
    return logfmt_value(str(value))


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, Any] = getattr(record, "fields", {})
        parts = [_timestamp(record), record.levelname, terminal(record.getMessage())]
        parts += [f"{k}={_text_value(v)}" for k, v in fields.items()]
        if record.exc_info:
            parts.append("traceback=" + _text_value(self.formatException(record.exc_info)))
        return " ".join(parts)


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"ts": _timestamp(record), "level": record.levelname, "event": record.getMessage()}
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure(
    fmt: Literal["text", "json"] = "text",
    *,
    level: int = logging.INFO,
    stream: IO[str] | None = None,
) -> None:
    """Send the ``rackcron`` logger's events to ``stream`` (stderr) in ``fmt``."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_JsonFormatter() if fmt == "json" else _TextFormatter())
    LOGGER.handlers[:] = [handler]
    LOGGER.setLevel(level)
    LOGGER.propagate = False
