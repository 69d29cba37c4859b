"""Bearer tokens: the server's token file, and which named token a call carries.

The token file (``rackcron serve --grpc-token-file``) holds one token per line; blank
lines and lines starting with ``#`` are skipped. A line is either

* ``SCOPE NAME:TOKEN`` -- a named token with a scope (:class:`TokenScope`): ``read``,
  ``write`` or ``admin``, then whitespace, then the name;
* ``NAME:TOKEN`` -- a named token without a scope: NAME is 1 to 64 letters, digits,
  ``.``, ``_`` or ``-`` (starting with a letter or digit), split from the token at the
  first ``:``;
* ``TOKEN`` -- a plain token (a line without ``:``), without a scope, named by its
  position among the file's tokens: ``token-1``, ``token-2``, ...

A token without a scope keeps the rights every token had before scopes existed:
:data:`UNSCOPED` (``admin``), and ``serve`` warns about it. The scope form cannot be
mistaken for an older line: before the first ``:`` an older file held a name alone,
which has no whitespace. The name is who the audit trail records for the calls a token
authenticates (``rackcron.audit``), so names and tokens are each unique in a file. A
token is printable ASCII (it travels in a header). A line breaking a rule makes the
file unusable, the error naming the file and the line, and never the token.
``$RACKCRON_GRPC_TOKEN`` adds a token named ``env``, without a scope (the same token
as a line of the file keeps that line's name and scope).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rackcron.wire.token_scopes import TokenScope

__all__ = [
    "ENV_TOKEN_NAME",
    "UNSCOPED",
    "BadTokenFile",
    "Token",
    "TokenScope",
    "TokenSet",
    "parse_tokens",
]

TOKEN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: The name of the token given by environment variable.
ENV_TOKEN_NAME = "env"


#: The rights of a token without a scope: every token's before scopes existed.
UNSCOPED = TokenScope.ADMIN


class BadTokenFile(ValueError):
    """A token file breaks a rule; the message names the file and the line."""


@dataclass(frozen=True)
class Token:
    """A bearer token, the name calls it authenticates are recorded under, and its scope
    (None: its line gave none, and it has :data:`UNSCOPED`'s rights)."""

    name: str
    secret: str = field(repr=False)
    scope: TokenScope | None = None

    @property
    def rights(self) -> TokenScope:
        """What the token may do: its scope, else :data:`UNSCOPED`."""
        return self.scope or UNSCOPED


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
        head, colon, secret = line.partition(":")
        secret = secret.strip()
        if not colon:
            scope, name, secret = None, f"token-{len(tokens) + 1}", line
        else:
            scope, name = _scope_and_name(head, where)  # unstripped: "read :x" is told apart
            if not TOKEN_NAME.fullmatch(name):
                raise BadTokenFile(
                    f"{where}: the name before the first ':' must be 1 to 64 letters, digits,"
                    " '.', '_' or '-', starting with a letter or digit, after a scope if"
                    " any (a plain token has no ':')"
                )
            if not secret:
                raise BadTokenFile(f"{where}: no token after the name {name!r}")
        if not _printable_ascii(secret):
            raise BadTokenFile(f"{where}: the token must be printable ASCII")
        if name in names:
            raise BadTokenFile(f"{where}: the name {name!r} is taken by line {names[name]}")
        if secret in secrets:
            raise BadTokenFile(f"{where}: the same token as line {secrets[secret]}")
        names[name], secrets[secret] = number, number
        tokens.append(Token(name, secret, scope))
    return tuple(tokens)


def _scope_and_name(head: str, where: str) -> tuple[TokenScope | None, str]:
    """The scope and the name a line gives before its first ``:`` (``head``, as written;
    the name unchecked).

    :raises BadTokenFile: two words, the first of them no scope (not shown: it may be
        part of a token written without its name); or a scope alone, its name forgotten
        (a token named like a scope would get every right, not that scope's).
    """
    words = head.split()
    scopes = ", ".join(s.value for s in TokenScope)
    # "read :TOKEN": a scope whose name was forgotten. (A name alone is never followed by
    # a space, so an older file's token named "read" still reads as before.)
    if (
        len(words) == 1
        and head[-1:].isspace()
        and words[0].lower() in {s.value for s in TokenScope}
    ):
        raise BadTokenFile(
            f"{where}: a scope needs a name after it ('{words[0].lower()} NAME:TOKEN')"
        )
    if len(words) != 2:
        return None, head.strip()
    word, name = words
    try:
        return TokenScope(word), name
    except ValueError:
        hint = " (scopes are lowercase)" if word.lower() in {s.value for s in TokenScope} else ""
        raise BadTokenFile(
            f"{where}: before the first ':' give a name, or a scope ({scopes}) and a name:"
            f" the first word is no scope{hint}"
        ) from None


class TokenSet:
    """The tokens a server accepts, and which of them a call carries."""

    def __init__(self, tokens: Iterable[Token] = ()) -> None:
        self._tokens = [(t, t.secret.encode()) for t in tokens]

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    def find(self, metadata: Iterable[tuple[str, Any]] | None) -> Token | None:
        """The token in the call's first ``authorization: Bearer <token>`` metadata; None
        when there is none or it is not one of the tokens."""
        for key, value in metadata or ():
            if key == "authorization" and isinstance(value, str):
                scheme, _, token = value.partition(" ")
                if scheme.lower() != "bearer":
                    return None
                given = token.strip().encode()
                found = None
                for candidate, secret in self._tokens:  # every one, always: the time says nothing
                    if hmac.compare_digest(given, secret):
                        found = candidate
                return found
        return None

    def match(self, metadata: Iterable[tuple[str, Any]] | None) -> str | None:
        """The name of the token the call carries (:meth:`find`), or None."""
        found = self.find(metadata)
        return None if found is None else found.name
