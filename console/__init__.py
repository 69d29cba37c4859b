"""The web console: a read-only view of the store, served by ``rackcron serve --http-listen``.

A front beside the reconciler, the dispatcher and the shim: it reads through the service
(``rackcron.service``) and draws with the core's pure modules (``rackcron.domain.upcoming``,
``rackcron.history``). Changes go through Git; nothing here writes to the store.

``app`` routes and renders (Jinja2 templates under ``templates/``, auto-escaped),
``timeline`` turns upcoming firings into an SVG picture, ``words`` says a spec in words,
and ``auth`` checks the token a request carries when the console is bound beyond loopback.
"""

from rackcron.console.app import console_app
from rackcron.console.auth import Gate

__all__ = ["Gate", "console_app"]
