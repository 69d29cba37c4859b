"""Delivering notifications to webhooks: a bounded queue and a worker per webhook.

:meth:`Notifier.emit` never blocks and never raises: it puts the event's body on each
webhook's queue (``Delivery.queue_size`` events at most) and returns; an event that
finds a queue full is dropped for that webhook and counted
(``rackcron_notifications_dropped_total``). So a webhook that is down, slow or
erroring can only lose its own events: the dispatcher and the task runner, which
emit, never wait for it, and nor does another webhook.

Each webhook's worker thread POSTs its events in order. A request has one deadline
for the whole exchange (``Delivery.timeout``: connect, TLS, send, and the status
line, headers and body of the answer, through
:class:`~rackcron.dispatcher.deadline.BoundedHTTPConnection`). A 2xx answer delivers
the event (``rackcron_notifications_sent_total``); a transport failure, a timeout, a
5xx, 408 or 429 is retried after a backoff that doubles, up to ``Delivery.attempts``
attempts; any other answer (a 4xx, a redirect: not followed) cannot get better by
retrying. An event not delivered is logged and counted
(``rackcron_notifications_failed_total``). Every retry sends the same bytes, with the
same ``id``, so a receiver can drop duplicates.

With a secret (``--notify-secret-file``, read by :func:`load_secret`) each request
carries ``X-Rackcron-Signature: sha256=<hex>``, the HMAC-SHA256 of the exact body
(:func:`sign`). The URL is the operator's, so the notifier calls any host it names;
its path and query often hold the webhook's own secret, so neither is logged nor
used as a metric label: the label is the URL's scheme, host and port.

:meth:`Notifier.close` stops taking events and gives the workers ``grace`` seconds to
deliver what is queued: one attempt each, no retry (no attempt starts, and none runs,
past it); what is left is dropped and counted. The workers are daemon threads: a hung webhook cannot hold the
process.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import logging
import ssl
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from rackcron import __version__
from rackcron.dispatcher.deadline import BoundedHTTPConnection, BoundedHTTPSConnection, Deadline
from rackcron.dispatcher.metrics import Metrics
from rackcron.domain.escape import terminal
from rackcron.domain.notifications import Notification
from rackcron.logs import LOGGER, Seconds, event

__all__ = [
    "SIGNATURE_HEADER",
    "Delivery",
    "Notifier",
    "Webhook",
    "load_secret",
    "parse_webhook",
    "sign",
]

#: The header carrying the body's HMAC-SHA256, as ``sha256=<hex>``.
SIGNATURE_HEADER = "X-Rackcron-Signature"
#: The largest secret file read (bytes).
MAX_SECRET = 16 * 1024
#: How much of an answer is read (then the connection is closed).
_MAX_ANSWER = 64 * 1024
#: Answers worth another attempt, besides 5xx.
_RETRY_STATUSES = frozenset({408, 429})


@dataclass(frozen=True)
class Webhook:
    """A webhook URL, checked (:func:`parse_webhook`)."""

    url: str
    scheme: str
    host: str
    port: int
    target: str  # path and query, as sent in the request line

    @property
    def label(self) -> str:
        """What logs and metrics call it: scheme, host and port (never the path or query)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def _shown(url: str) -> str:
    """``url`` as an error message quotes it: its scheme and host, never a password or the
    path and query (a Slack webhook's secret is its path)."""
    parts = urlsplit(url)
    if not parts.netloc:
        return terminal(f"{parts.scheme}:…" if parts.scheme else "…")
    host = parts.netloc.rpartition("@")[2]
    rest = "/…" if parts.path not in ("", "/") or parts.query or parts.fragment else ""
    return terminal(f"{parts.scheme}://{host}{rest}")


def parse_webhook(url: str) -> Webhook:
    """``url`` as a webhook: ``http(s)://host[:port][/path][?query]``.

    :raises ValueError: another scheme, no host, a bad port, a user or a fragment (the
        message quotes the URL without its user, password, path or query).
    """
    parts = urlsplit(url)
    shown = _shown(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"expected an http:// or https:// URL, got {shown!r}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"bad port in {shown!r}") from None
    if not parts.hostname or port == 0:
        raise ValueError(f"expected http(s)://host[:port][/path], got {shown!r}")
    if parts.username is not None:
        raise ValueError(f"a webhook URL carries no user or password: {shown!r}")
    if parts.fragment:
        raise ValueError(f"a webhook URL has no #fragment: {shown!r}")
    if any(not c.isprintable() or c.isspace() for c in url):
        raise ValueError(f"a webhook URL has no spaces or control characters: {shown!r}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    default = 443 if parts.scheme == "https" else 80
    return Webhook(url, parts.scheme, parts.hostname, port or default, target)


def load_secret(path: str | Path) -> bytes:
    """The signing secret in the file at ``path``: its bytes, less one trailing newline.

    :raises ValueError: the file cannot be read, is empty, or is larger than 16 KiB.
    """
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_SECRET + 1)
    except OSError as exc:
        raise ValueError(f"cannot read {terminal(str(path))}: {exc.strerror or exc}") from None
    if len(data) > MAX_SECRET:
        raise ValueError(f"{terminal(str(path))} is larger than {MAX_SECRET} bytes")
    secret = data.removesuffix(b"\n").removesuffix(b"\r")
    if not secret:
        raise ValueError(f"{terminal(str(path))} is empty")
    return secret


def sign(body: bytes, secret: bytes) -> str:
    """The signature header's value for ``body``: ``sha256=`` and its HMAC-SHA256 in hex."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Delivery:
    """How patiently each webhook is called."""

    attempts: int = 3  # per event, the first included
    backoff: float = 1.0  # seconds before the second attempt, doubling after each failure
    max_backoff: float = 30.0
    timeout: float = 5.0  # seconds for a whole request
    queue_size: int = 1000  # events waiting per webhook; more are dropped

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed attempt."""
        return min(self.backoff * 2.0 ** (failures - 1), self.max_backoff)


@dataclass(frozen=True)
class _Item:
    kind: str
    id: str
    body: bytes
    headers: dict[str, str]


class _Queue:
    """One webhook's bounded queue; ``deadline`` is set when the notifier closes."""

    def __init__(self, size: int) -> None:
        self._items: deque[_Item] = deque()
        self._size = size
        self._ready = threading.Condition()
        self.deadline: float | None = None
        self.dropping = False  # the last offer was dropped (its first drop is logged)

    def offer(self, item: _Item) -> bool:
        """Queue ``item``; False (not queued) when the queue is full or closed."""
        with self._ready:
            if self.deadline is not None or len(self._items) >= self._size:
                return False
            self._items.append(item)
            self._ready.notify()
            return True

    def take(self) -> _Item | None:
        """The next item, waiting for one; None once closed and empty, or past the deadline."""
        with self._ready:
            while not self._items and self.deadline is None:
                self._ready.wait()
            if not self._items or time.monotonic() >= (self.deadline or float("inf")):
                return None
            return self._items.popleft()

    def close(self, deadline: float) -> None:
        with self._ready:
            self.deadline = deadline
            self._ready.notify_all()

    def clear(self) -> int:
        """Empty the queue; how many items it held."""
        with self._ready:
            left = len(self._items)
            self._items.clear()
            return left


class Notifier:
    """Posts each emitted notification to every webhook (see the module docstring)."""

    def __init__(
        self,
        webhooks: Sequence[Webhook],
        *,
        secret: bytes | None = None,
        delivery: Delivery = Delivery(),
        metrics: Metrics | None = None,
    ) -> None:
        self.webhooks = list(webhooks)
        self.delivery = delivery
        self.metrics = metrics if metrics is not None else Metrics()
        self._secret = secret
        self._closing = threading.Event()
        self._queues = [_Queue(delivery.queue_size) for _ in self.webhooks]
        self._threads = [
            threading.Thread(
                target=self._serve, args=(webhook, q), name=f"rackcron-notify-{i}", daemon=True
            )
            for i, (webhook, q) in enumerate(zip(self.webhooks, self._queues, strict=True))
        ]
        for thread in self._threads:
            thread.start()

    def emit(self, notification: Notification) -> None:
        """Queue ``notification`` for every webhook, at once; dropped (and counted) where a
        queue is full. Never blocks, never raises."""
        body = notification.body()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"rackcron/{__version__}",
            "X-Rackcron-Event": notification.kind.value,
            "X-Rackcron-Delivery": str(notification.id),
        }
        if self._secret is not None:
            headers[SIGNATURE_HEADER] = sign(body, self._secret)
        item = _Item(notification.kind.value, str(notification.id), body, headers)
        for webhook, q in zip(self.webhooks, self._queues, strict=True):
            if q.offer(item):
                q.dropping = False
                continue
            self.metrics.notifications_dropped.labels(webhook.label).inc()
            if not q.dropping:  # once per run of drops: a dead webhook must not flood the log
                q.dropping = True
                event(
                    logging.WARNING,
                    "notification dropped: queue full",
                    webhook=webhook.label,
                    kind=item.kind,
                    id=item.id,
                    queue=self.delivery.queue_size,
                )

    def close(self, grace: float) -> None:
        """Take no more events; deliver what is queued for up to ``grace`` seconds, then
        drop (and count) the rest. Returns within about ``grace`` seconds."""
        deadline = time.monotonic() + grace
        self._closing.set()
        for q in self._queues:
            q.close(deadline)
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        for webhook, q in zip(self.webhooks, self._queues, strict=True):
            if left := q.clear():
                self.metrics.notifications_dropped.labels(webhook.label).inc(left)
                event(
                    logging.WARNING,
                    "notifications dropped on stop",
                    webhook=webhook.label,
                    count=left,
                    grace=Seconds(grace),
                )

    def _serve(self, webhook: Webhook, q: _Queue) -> None:
        while (item := q.take()) is not None:
            try:
                delivered, error, attempts = self._deliver(webhook, q, item)
            except Exception:  # a bug: this event is lost, never the worker
                fields = {"webhook": webhook.label, "kind": item.kind, "id": item.id}
                LOGGER.exception("notification worker failed", extra={"fields": fields})
                delivered, error, attempts = False, "internal error", 0
            if delivered:
                self.metrics.notifications_sent.labels(webhook.label).inc()
            else:  # logged before counted: whoever sees the count can find the line
                event(
                    logging.WARNING,
                    "notification not delivered",
                    webhook=webhook.label,
                    kind=item.kind,
                    id=item.id,
                    attempts=attempts,
                    error=error,
                )
                self.metrics.notifications_failed.labels(webhook.label).inc()

    def _deliver(self, webhook: Webhook, q: _Queue, item: _Item) -> tuple[bool, str, int]:
        """Attempts at ``item`` until one succeeds, one cannot be retried, or none is left
        (or the close deadline passes): (delivered, the last error, attempts made)."""
        policy = self.delivery
        error = "not attempted before the process stopped"
        for attempt in range(1, policy.attempts + 1):
            timeout = policy.timeout
            if q.deadline is not None:
                timeout = min(timeout, q.deadline - time.monotonic())
                if timeout <= 0:
                    return False, error, attempt - 1
            try:
                status = _post(webhook, item, timeout)
            except (OSError, http.client.HTTPException) as exc:
                error = _describe(exc, timeout)
                retry = True
            else:
                if 200 <= status < 300:
                    return True, "", attempt
                error = f"HTTP {status}"
                retry = status >= 500 or status in _RETRY_STATUSES
            if not retry or attempt == policy.attempts:
                return False, error, attempt
            event(
                logging.DEBUG,
                "notification attempt failed",
                webhook=webhook.label,
                kind=item.kind,
                id=item.id,
                attempt=attempt,
                error=error,
            )
            # Closing: each event left gets one attempt in the grace, not a retry.
            if self._closing.wait(policy.delay(attempt)):
                return False, error, attempt
        return False, error, policy.attempts


def _post(webhook: Webhook, item: _Item, timeout: float) -> int:
    """One POST of ``item`` to ``webhook``, ended by ``timeout`` seconds; the answer's status.

    :raises OSError: the request failed (``TimeoutError`` past the deadline).
    :raises http.client.HTTPException: the answer was not HTTP.
    """
    connection: BoundedHTTPConnection | BoundedHTTPSConnection
    if webhook.scheme == "https":
        context = ssl.create_default_context()
        connection = BoundedHTTPSConnection(
            webhook.host, webhook.port, timeout=timeout, context=context
        )
    else:
        connection = BoundedHTTPConnection(webhook.host, webhook.port, timeout=timeout)
    connection.deadline = Deadline(timeout)
    try:
        connection.request("POST", webhook.target, body=item.body, headers=item.headers)
        response = connection.getresponse()
        response.read(_MAX_ANSWER)
        return response.status
    finally:
        connection.close()


def _describe(exc: OSError | http.client.HTTPException, timeout: float) -> str:
    """A failed request, in a few words."""
    if isinstance(exc, TimeoutError):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not trusted: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(exc, http.client.HTTPException):
        return f"invalid HTTP answer: {type(exc).__name__}"
    return exc.strerror or type(exc).__name__
