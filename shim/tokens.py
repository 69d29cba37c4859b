"""Bearer tokens: the server's token file, and which named token a call carries.

The token file (``rackcron serve --grpc-token-file``) holds one token per line; blank
lines and lines starting with ``#`` are skipped. A line is either

* ``NAME:TOKEN`` -- a named token: NAME is 1 to 64 letters, digits, ``.``, ``_`` or
  ``-`` (starting with a letter or digit), split from the token at the first ``:``;
* ``TOKEN`` -- a plain token (a line without ``:``), named by its position among the
  file's tokens: ``token-1``, ``token-2``, ...

The name is who the audit trail records for the calls a token authenticates
(``rackcron.audit``), so names and tokens are each unique in a file. A token is
printable ASCII (it travels in a header). A line breaking a rule makes the file
unusable, the error naming the file and the line, and never the token.
``$RACKCRON_GRPC_TOKEN`` adds a token named ``env`` (the same token as a line of the
file keeps that line's name).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ENV_TOKEN_NAME", "BadTokenFile", "Token", "TokenSet", "parse_tokens"]

TOKEN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: The name of the token given by environment variable.
ENV_TOKEN_NAME = "env"


class BadTokenFile(ValueError):
    """A token file breaks a rule; the message names the file and the line."""


@dataclass(frozen=True)
class Token:
    """A bearer token and the name calls it authenticates are recorded under."""

    name: str
    secret: str = field(repr=False)


def _printable_ascii(text: str) -> bool:
    return text.isascii() and text.isprintable()


def parse_tokens(text: str, path: str) -> tuple[Token, ...]:
    """The tokens of a token file's ``text`` (read from ``path``, for messages).

    :raises BadTokenFile: ``<path>:<line>: ...`` for the first line that breaks a rule.
    """
    tokens: list[Token] = []
    names: dict[str, int] = {}
    secrets: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        name, colon, secret = (part.strip() for part in line.partition(":"))
        if not colon:
            name, secret = f"token-{len(tokens) + 1}", line
        elif not TOKEN_NAME.fullmatch(name):
            raise BadTokenFile(
                f"{where}: the name before the first ':' must be 1 to 64 letters, digits,"
                " '.', '_' or '-', starting with a letter or digit (a plain token has no ':')"
            )
        elif not secret:
            raise BadTokenFile(f"{where}: no token after the name {name!r}")
        if not _printable_ascii(secret):
            raise BadTokenFile(f"{where}: the token must be printable ASCII")
        if name in names:
            raise BadTokenFile(f"{where}: the name {name!r} is taken by line {names[name]}")
        if secret in secrets:
            raise BadTokenFile(f"{where}: the same token as line {secrets[secret]}")
        names[name], secrets[secret] = number, number
        tokens.append(Token(name, secret))
    return tuple(tokens)


class TokenSet:
    """The tokens a server accepts, and the name of the one a call carries."""

    def __init__(self, tokens: Iterable[Token] = ()) -> None:
        self._tokens = [(t.name, t.secret.encode()) for t in tokens]

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    def match(self, metadata: Iterable[tuple[str, Any]] | None) -> str | None:
        """The name of the token in the call's first ``authorization: Bearer <token>``
        metadata; None when there is none or it is not one of the tokens."""
        for key, value in metadata or ():
            if key == "authorization" and isinstance(value, str):
                scheme, _, token = value.partition(" ")
                if scheme.lower() != "bearer":
                    return None
                given = token.strip().encode()
                found = None
                for name, secret in self._tokens:  # every token, always: the time says nothing
                    if hmac.compare_digest(given, secret):
                        found = name
                return found
        return None
