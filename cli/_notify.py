"""``--notify URL`` and ``--notify-secret-file FILE``: webhooks told what happened.

Shared by ``serve`` (failed and expired tasks, skipped and missed firings, unreachable
controllers), ``apply`` and ``sync`` (applies applied or failed). The options become a
:class:`NotifyConfig`; :func:`start` turns one into a running
:class:`~rackcron.dispatcher.notify.Notifier` (docs/notifications.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rackcron.cli._common import option_group

if TYPE_CHECKING:
    from rackcron.dispatcher.metrics import Metrics
    from rackcron.dispatcher.notify import Delivery, Notifier, Webhook

__all__ = ["CLI_GRACE", "NotifyConfig", "notify_options", "start"]

F = TypeVar("F", bound=Callable[..., Any])

#: Seconds a command that ends (apply, a sync that stops) waits for its notifications.
CLI_GRACE = 5.0


def _default_delivery() -> Delivery:
    from rackcron.dispatcher.notify import Delivery

    return Delivery()


@dataclass(frozen=True)
class NotifyConfig:
    """Where notifications go and how they are delivered."""

    webhooks: tuple[Webhook, ...]
    secret: bytes | None = None  # signs each body (HMAC-SHA256)
    delivery: Delivery = field(default_factory=_default_delivery)
    grace: float = 2.0  # seconds ``serve`` gives the queued ones when it stops


def start(config: NotifyConfig | None, metrics: Metrics | None = None) -> Notifier | None:
    """A notifier delivering as ``config`` says (None: no webhooks, no notifier)."""
    if config is None:
        return None
    from rackcron.dispatcher.notify import Notifier

    return Notifier(
        config.webhooks, secret=config.secret, delivery=config.delivery, metrics=metrics
    )


def _webhooks(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[Webhook, ...]:
    from rackcron.dispatcher.notify import parse_webhook

    try:
        return tuple(parse_webhook(value) for value in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def _config(notify: tuple[Webhook, ...], notify_secret_file: str | None) -> NotifyConfig | None:
    from rackcron.dispatcher.notify import load_secret

    if not notify:
        if notify_secret_file is not None:
            raise click.UsageError("--notify-secret-file needs --notify")
        return None
    secret = None
    if notify_secret_file is not None:
        try:
            secret = load_secret(notify_secret_file)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--notify-secret-file") from None
    return NotifyConfig(notify, secret)


def notify_options(what: str) -> Callable[[F], F]:
    """``--notify`` and ``--notify-secret-file``, passed on as ``notify: NotifyConfig |
    None``; ``what`` says what the command tells (for the help)."""
    return option_group(
        "notify",
        _config,
        click.option(
            "--notify",
            multiple=True,
            metavar="URL",
            callback=_webhooks,
            help=f"POST a JSON event to this http(s) webhook for {what} (repeatable; "
            "Slack-compatible: it has a `text` field; docs/notifications.md).",
        ),
        click.option(
            "--notify-secret-file",
            type=click.Path(dir_okay=False),
            metavar="FILE",
            help="Sign each notification: the HMAC-SHA256 of its body with the secret in FILE, "
            "in the X-Rackcron-Signature header.",
        ),
    )
