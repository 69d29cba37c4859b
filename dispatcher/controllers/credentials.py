"""Controller credentials: resolved by the server from places its operator configured.

A rack's ``controller.credential`` is only a *name* (``CREDENTIAL_NAME``: lower-case
letters, digits, ``_`` and ``-``); the tree can never name a variable or a path, so a
pull request cannot make the server send its own secrets (the database URL, the gRPC
tokens) to a controller of the PR's choosing. For a credential ``NAME`` the server
looks in two places (docs/dispatch.md "Controller credentials"):

* the environment variable ``RACKCRON_CONTROLLER_SECRET_<NAME>`` (``NAME`` upper-cased,
  ``-`` as ``_``): the bearer token. No other setting uses this prefix;
* the directory ``--controller-secrets DIR``: ``DIR/NAME/token`` (the bearer token),
  ``DIR/NAME/ca.pem`` (the CA bundle that verifies the controller), ``DIR/NAME/client.pem``
  and ``DIR/NAME/client.key`` (a client certificate and key for mutual TLS, both or
  neither). Symbolic links are followed only while they stay inside ``DIR`` (the real
  path is checked), so a secrets volume built of links works and nothing outside leaks.

A token in both places is refused (which one is meant?), and so is a credential with
nothing in either place. Every refusal raises
:class:`~rackcron.dispatcher.controllers.base.ControllerRefused` with the reason, never the secret.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rackcron.dispatcher.controllers.base import ControllerRefused
from rackcron.domain.models import CREDENTIAL_NAME

__all__ = ["ENV_PREFIX", "FILES", "Credential", "CredentialStore", "env_name"]

#: The prefix of the variables holding controller tokens.
ENV_PREFIX = "RACKCRON_CONTROLLER_SECRET_"
#: The files a credential's directory may hold.
FILES = ("token", "ca.pem", "client.pem", "client.key")
#: A token file larger than this is not a token.
_MAX_TOKEN_BYTES = 16 * 1024


def env_name(credential: str) -> str:
    """The variable holding ``credential``'s token: ``RACKCRON_CONTROLLER_SECRET_<NAME>``."""
    return ENV_PREFIX + credential.upper().replace("-", "_")


@dataclass(frozen=True)
class Credential:
    """What a credential resolved to: a token, and the real paths of its TLS files."""

    token: str | None = None
    ca_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None


class CredentialStore:
    """The credentials of one server: its environment and (optionally) a secrets directory.

    :raises ValueError: ``directory`` is given but is not a directory.
    """

    def __init__(
        self, directory: str | Path | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        self.directory = Path(os.path.realpath(directory)) if directory is not None else None
        if self.directory is not None and not self.directory.is_dir():
            raise ValueError(f"{directory}: not a directory")
        self._environ = os.environ if environ is None else environ

    def resolve(self, name: str) -> Credential:
        """The credential ``name``.

        :raises ControllerRefused: the name is malformed, a file is outside the secrets
            directory or unreadable, the token is in both places, or nothing is found.
        """
        if not CREDENTIAL_NAME.fullmatch(name):
            raise ControllerRefused(f"credential {name!r}: not a credential name")
        files = {f: self._file(name, f) for f in FILES}
        variable = env_name(name)
        token = self._environ.get(variable) or None
        if token is not None and files["token"] is not None:
            raise ControllerRefused(
                f"credential {name!r}: a token is both in {variable} and in"
                f" {self.directory}/{name}/token; keep one"
            )
        if token is None and files["token"] is not None:
            token = _read_token(files["token"], name)
        if (files["client.pem"] is None) != (files["client.key"] is None):
            raise ControllerRefused(
                f"credential {name!r}: client.pem and client.key go together (mutual TLS)"
            )
        if token is None and not any(files.values()):
            where = f"{variable}" + (f" nor {self.directory}/{name}/" if self.directory else "")
            raise ControllerRefused(
                f"credential {name!r} is not configured on this server (neither {where};"
                ' see docs/dispatch.md "Controller credentials")'
            )
        return Credential(token, files["ca.pem"], files["client.pem"], files["client.key"])

    def _file(self, name: str, file: str) -> str | None:
        """The real path of ``DIR/name/file``; None when there is no such file.

        :raises ControllerRefused: it resolves outside the directory, or is not a file.
        """
        if self.directory is None:
            return None
        path = self.directory / name / file
        if not os.path.lexists(path):
            return None
        real = os.path.realpath(path)
        if os.path.commonpath([real, self.directory]) != str(self.directory):
            raise ControllerRefused(
                f"credential {name!r}: {file} leads outside the secrets directory; refused"
            )
        if not os.path.isfile(real):
            raise ControllerRefused(f"credential {name!r}: {file} is not a readable file")
        return real


def _read_token(path: str, name: str) -> str:
    """The token in ``path`` (a real path inside the secrets directory), stripped."""
    try:
        # O_NOFOLLOW: the path was resolved and checked; a link swapped in since is refused.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as file:
            data = file.read(_MAX_TOKEN_BYTES + 1)
    except OSError as exc:
        raise ControllerRefused(f"credential {name!r}: cannot read token: {exc.strerror}") from None
    if len(data) > _MAX_TOKEN_BYTES:
        raise ControllerRefused(f"credential {name!r}: token is larger than 16 KiB")
    try:
        token = data.decode("ascii").strip()
    except UnicodeDecodeError:
        token = ""
    if not token or not token.isprintable() or " " in token:
        raise ControllerRefused(
            f"credential {name!r}: token must be one line of printable ASCII without spaces"
        )
    return token
