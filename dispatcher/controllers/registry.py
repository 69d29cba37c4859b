"""Which driver reaches which rack: a rack's ``controller`` setting -> a :class:`Controller`.

A rack without a setting uses the server's default (the built-in simulator unless
configured). Drivers are built once per distinct controller and shared; a setting
that cannot be turned into a driver (its token's variable unset, say) gives a
driver whose every call raises :class:`ControllerError` with the reason, so the
rack's tasks fail with that message and no other rack notices.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any

from dispatcher.controllers.base import Controller, ControllerError, ControllerState, TaskOrder
from dispatcher.controllers.http import HttpController
from dispatcher.controllers.simulator import Simulator
from rackcron.errors import RackcronError
from rackcron.models import ControllerSpec

__all__ = ["Controllers", "controller_key"]

Setting = dict[str, Any] | None


def controller_key(setting: Setting) -> str:
    """The controller a setting names (``simulator`` or its URL): the runner sends one
    controller one share of calls at a time, and labels its metrics with this."""
    if not setting or setting.get("kind", "simulator") == "simulator":
        return "simulator"
    return str(setting.get("url"))


class _Broken:
    """A controller that cannot be built: every call fails with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def submit(self, order: TaskOrder) -> ControllerState:
        raise ControllerError(self.reason)

    def status(self, task_id: uuid.UUID) -> ControllerState:
        raise ControllerError(self.reason)

    def cancel(self, task_id: uuid.UUID) -> None:
        raise ControllerError(self.reason)


def _token(spec: ControllerSpec) -> str | None:
    if name := spec.token_env:
        token = os.environ.get(name)
        if not token:
            raise ControllerError(f"the controller token variable {name} is not set")
        return token
    if path := spec.token_file:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ControllerError(f"cannot read the controller token file {path}: {exc}") from None
    return None


def _build_http(spec: ControllerSpec) -> Controller:
    assert spec.url is not None
    return HttpController(
        spec.url,
        token=_token(spec),
        ca_file=spec.ca_file,
        client_cert=spec.client_cert,
        client_key=spec.client_key,
        timeout=spec.timeout_seconds,
    )


class Controllers:
    """The drivers of one server: the simulator, and one per HTTP controller."""

    def __init__(self, simulator: Simulator, *, default: Setting = None) -> None:
        self.simulator = simulator
        self.default = default
        self._built: dict[str, Controller] = {}
        self._lock = threading.Lock()

    def key(self, setting: Setting) -> str:
        return controller_key(setting or self.default)

    def get(self, setting: Setting) -> Controller:
        """The driver for a rack's setting (None: the default controller).

        One driver per distinct setting: two racks behind one URL with different
        tokens get a driver each.
        """
        setting = setting or self.default
        key = controller_key(setting)
        if key == "simulator":
            return self.simulator
        identity = json.dumps(setting, sort_keys=True)
        with self._lock:
            if identity not in self._built:
                try:
                    self._built[identity] = _build_http(ControllerSpec.model_validate(setting))
                except (RackcronError, ControllerError, ValueError) as exc:
                    message = exc.message if isinstance(exc, RackcronError) else str(exc)
                    return _Broken(f"{key}: {message}")
            return self._built[identity]
