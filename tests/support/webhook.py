"""A webhook receiver on 127.0.0.1 for the notification tests, and the checks each event gets.

:class:`Receiver` is a real HTTP server (``http.server`` in a thread) that records every
POST and answers as its ``answer`` says: a status (200, 500...), after an optional
sleep, or held until :meth:`Receiver.release`. :func:`check` validates an event body
against the published JSON Schema and its ``X-Rackcron-Signature`` against the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any

import jsonschema

from rackcron.domain.models import MissReason
from rackcron.domain.notifications import (
    EventKind,
    FailureReason,
    Notification,
    TaskRef,
    apply_applied,
    apply_failed,
    controller_unreachable,
    firing_missed,
    firing_skipped,
    rollout_event,
    task_expired,
    task_failed,
)

__all__ = [
    "SCHEMA",
    "Answer",
    "Received",
    "Receiver",
    "check",
    "one_of_each",
    "schema_errors",
    "wait_until",
]

#: The notification schema as installed (schemas/notifications/v1/event.schema.json).
SCHEMA: dict[str, Any] = json.loads(
    (files("rackcron.schemas") / "notifications" / "v1" / "event.schema.json").read_text()
)
_VALIDATOR = jsonschema.Draft202012Validator(
    SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
)


def _task(name: str, status: str) -> TaskRef:
    return TaskRef(
        id=uuid.UUID(int=1), rack_id=uuid.UUID(int=2), rack=name, schedule_id=uuid.UUID(int=3),
        schedule=name, operation_type="UPGRADE_FIRMWARE",
        description=f"{name} — 2026-06-01T12:00:00Z", operation_name="upgrade_firmware",
        operation_text=f"upgrade firmware to {name}",
        status=status, message=f"controller said {name}",
    )  # fmt: skip


def one_of_each(name: str, *, at: datetime) -> dict[EventKind, Notification]:
    """One notification of each kind at ``at``, every value from outside set to ``name``."""
    due = at - timedelta(seconds=5.25)
    return {
        EventKind.TASK_FAILED: task_failed(_task(name, "failed"), FailureReason.FAILED, at=at),
        EventKind.TASK_EXPIRED: task_expired(_task(name, "terminated"), at=at),
        EventKind.FIRING_MISSED: firing_missed(
            uuid.UUID(int=3), name, due_at=due, at=at, reason=MissReason.FREEZE, freeze=name,
        ),
        EventKind.FIRING_SKIPPED: firing_skipped(
            uuid.UUID(int=3), name, due_at=due, at=at, rack_ids=[uuid.UUID(int=2)]
        ),
        EventKind.CONTROLLER_UNREACHABLE: controller_unreachable(
            f"http://127.0.0.1:9/{name}", [_task(name, "failed")], attempts=5, at=at
        ),
        EventKind.APPLY_APPLIED: apply_applied(
            "apply", apply_id=7, revision="0123456789abcdef", source=name, author=name,
            counts={"create": 2, "update": 0, "replace": 0, "delete": 1}, at=at,
        ),
        EventKind.APPLY_FAILED: apply_failed(
            "sync", revision=None, source=name, author=name, outcome="failed", error=name, at=at
        ),
        **{
            kind: rollout_event(
                kind, uuid.UUID(int=4), uuid.UUID(int=3), name, state=state,
                wave=2 if kind == EventKind.ROLLOUT_WAVE_DONE else None,
                stages={"completed": 3, "failed": 1, "active": 2, "waiting": 4}, at=at,
            )
            for kind, state in (
                (EventKind.ROLLOUT_STARTED, "rolling"), (EventKind.ROLLOUT_WAVE_DONE, "baking"),
                (EventKind.ROLLOUT_HALTED, "halted"), (EventKind.ROLLOUT_COMPLETED, "completed"),
                (EventKind.ROLLOUT_EXPIRED, "expired"), (EventKind.ROLLOUT_ABORTED, "aborted"),
            )
        },
    }  # fmt: skip


@dataclass(frozen=True)
class Answer:
    """How the receiver answers one request: ``status`` after ``delay`` seconds; ``hold``:
    not before :meth:`Receiver.release` (or ``delay``, whichever comes first)."""

    status: int = 200
    delay: float = 0.0
    hold: bool = False


@dataclass(frozen=True)
class Received:
    """One request as the receiver got it."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def event(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


def schema_errors(event: Any) -> list[str]:
    """Why ``event`` (parsed JSON) is not a valid notification; empty when it is."""
    return sorted(str(e.message) for e in _VALIDATOR.iter_errors(event))


def check(received: Received, secret: bytes | None = None) -> dict[str, Any]:
    """The event ``received`` carries, once it is valid against the schema and, with
    ``secret``, signed with it (HMAC-SHA256 of the exact body)."""
    event = received.event
    errors = schema_errors(event)
    assert not errors, f"{event.get('kind')}: {errors}"
    assert received.headers["Content-Type"] == "application/json"
    assert received.headers["X-Rackcron-Event"] == event["kind"]
    assert received.headers["X-Rackcron-Delivery"] == event["id"]
    if secret is not None:
        expected = "sha256=" + hmac.new(secret, received.body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(received.headers["X-Rackcron-Signature"], expected)
    else:
        assert "X-Rackcron-Signature" not in received.headers
    return event


class Receiver:
    """A webhook on a free 127.0.0.1 port; ``answer(n)`` says how to answer request n (0-based)."""

    def __init__(self, answer: Callable[[int], Answer] = lambda n: Answer()) -> None:
        self.answer = answer
        self.received: list[Received] = []
        self.answered = 0  # requests answered so far
        self._released = threading.Event()
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver._changed:
                    n = len(receiver.received)
                    receiver.received.append(Received(self.path, dict(self.headers), body))
                    receiver._changed.notify_all()
                answer = receiver.answer(n)
                if answer.hold:
                    receiver._released.wait(answer.delay or None)
                elif answer.delay:
                    time.sleep(answer.delay)
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:  # the client gave up first
                    pass
                with receiver._changed:
                    receiver.answered += 1
                    receiver._changed.notify_all()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/rackcron?token=abc"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Answer the held requests, and every later one at once."""
        self._released.set()

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        """The first ``count`` requests, once they have arrived (fails after ``timeout``)."""
        with self._changed:
            arrived = self._changed.wait_for(lambda: len(self.received) >= count, timeout)
        assert arrived, f"{len(self.received)} of {count} requests arrived"
        return self.received[:count]

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Wait for ``condition`` (polled); fails the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)
