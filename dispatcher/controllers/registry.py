"""Which driver reaches which rack: a rack's ``controller`` setting -> a :class:`Controller`.

A rack without a setting uses the server's default (the built-in simulator unless
configured). Drivers are built once per distinct controller and shared. Before one is
built the server checks the setting against what its operator configured: the URL's
host must be on the allow-list (:mod:`rackcron.dispatcher.controllers.allowlist`), and a named
credential is resolved from the server's own places
(:mod:`rackcron.dispatcher.controllers.credentials`), never from the tree. A setting that fails
(a host not allowed, a credential missing, a setting migrated without its old secrets)
gives a driver whose every call raises :class:`ControllerRefused` with the reason, so the
rack's tasks fail with that message, nothing leaves the process, and no other rack
notices. A refused setting is not remembered: it is checked again at its next call.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from rackcron.dispatcher.controllers.allowlist import AllowList
from rackcron.dispatcher.controllers.base import (
    Controller,
    ControllerError,
    ControllerRefused,
    ControllerState,
    TaskOrder,
)
from rackcron.dispatcher.controllers.credentials import Credential, CredentialStore
from rackcron.dispatcher.controllers.http import HttpController
from rackcron.dispatcher.controllers.simulator import Simulator
from rackcron.domain.models import ControllerSpec
from rackcron.errors import RackcronError

__all__ = ["Controllers", "controller_key"]

Setting = dict[str, Any] | None


def controller_key(setting: Setting) -> str:
    """The controller a setting names (``simulator`` or its URL): the runner sends one
    controller one share of calls at a time, and labels its metrics with this."""
    if not setting or setting.get("kind", "simulator") == "simulator":
        return "simulator"
    return str(setting.get("url"))


class _Broken:
    """A controller that will not be called: every call fails with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def submit(self, order: TaskOrder) -> ControllerState:
        raise ControllerRefused(self.reason)

    def status(self, task_id: uuid.UUID) -> ControllerState:
        raise ControllerRefused(self.reason)

    def cancel(self, task_id: uuid.UUID) -> None:
        raise ControllerRefused(self.reason)


class Controllers:
    """The drivers of one server: the simulator, and one per HTTP controller.

    ``allow``: the controller hosts that may be called (default: loopback only);
    ``credentials``: where named credentials are found (default: the environment only);
    ``default_token``: the bearer token of the default controller when its setting names
    no credential (``RACKCRON_CONTROLLER_TOKEN``, set by the operator).
    """

    def __init__(
        self,
        simulator: Simulator,
        *,
        default: Setting = None,
        allow: AllowList | None = None,
        credentials: CredentialStore | None = None,
        default_token: str | None = None,
    ) -> None:
        self.simulator = simulator
        self.default = default
        self.allow = allow if allow is not None else AllowList.parse()
        self.credentials = credentials if credentials is not None else CredentialStore()
        self.default_token = default_token
        self._built: dict[str, Controller] = {}
        self._lock = threading.Lock()

    def key(self, setting: Setting) -> str:
        return controller_key(setting or self.default)

    def get(self, setting: Setting) -> Controller:
        """The driver for a rack's setting (None: the default controller).

        One driver per distinct setting: two racks behind one URL with different
        credentials get a driver each.
        """
        default = not setting
        setting = setting or self.default
        key = controller_key(setting)
        if key == "simulator":
            return self.simulator
        identity = ("default " if default else "") + json.dumps(setting, sort_keys=True)
        with self._lock:
            if identity not in self._built:
                try:
                    spec = ControllerSpec.model_validate(setting)
                    self._built[identity] = self._build(spec, default=default)
                except (RackcronError, ControllerError, ValueError) as exc:
                    message = exc.message if isinstance(exc, RackcronError) else str(exc)
                    return _Broken(f"{key}: {message}")
            return self._built[identity]

    def refusal(self, setting: Setting) -> str | None:
        """Why a rack with ``setting`` cannot have its tasks delivered; None when it can."""
        driver = self.get(setting)
        return driver.reason if isinstance(driver, _Broken) else None

    def _build(self, spec: ControllerSpec, *, default: bool) -> Controller:
        """An http driver for ``spec``, once the server's rules allow it.

        :raises ControllerRefused: the host is not allowed, or the credential cannot be
            resolved, or the setting lost its secrets in migration 0004.
        :raises ValueError: the driver refuses the URL, token or TLS files.
        """
        assert spec.url is not None
        if spec.removed_fields:
            raise ControllerRefused(
                f"this rack's controller named {spec.removed_fields}, which rackcron no longer"
                " reads; declare `credential: <name>` on the rack and apply it"
                ' (docs/dispatch.md "Upgrading from token_env, token_file and the TLS file fields")'
            )
        if reason := self.allow.refusal(spec.url):
            raise ControllerRefused(reason)
        credential = Credential()
        if spec.credential is not None:
            credential = self.credentials.resolve(spec.credential)
        elif default and self.default_token:
            credential = Credential(token=self.default_token)
        return HttpController(
            spec.url,
            token=credential.token,
            ca_file=credential.ca_file,
            client_cert=credential.client_cert,
            client_key=credential.client_key,
            timeout=spec.timeout_seconds,
        )
