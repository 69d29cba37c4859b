"""Which controller URLs the task runner may call: the operator's allow-list.

A rack's ``controller.url`` comes from the tree, so a pull request could point a rack
at a listener of its own; only hosts the operator allowed (``rackcron serve
--controller-allow PATTERN``, repeatable) are ever called. A pattern is one of:

* an IP network or address: ``10.0.0.0/8``, ``192.0.2.7``, ``::1``, ``fd00::/8`` -
  matches a URL whose host is an IP address inside it, on any port;
* a host name: ``rc-a01.dc1.example.com`` - that host exactly (case-insensitive);
* a host glob: ``*.bmc.example.com`` - any host *under* that domain (one or more
  labels in place of ``*``, not the domain itself); ``*`` only as the first label;
* any of the two above with a port: ``rc.example.com:8443``, ``*.bmc.example.com:443``,
  ``[::1]:8470``, ``10.1.2.3:8443`` - only that port (the URL's explicit port, else 80
  for http and 443 for https).

Nothing is looked up in DNS: patterns match the host as the URL writes it, so an IP
network never matches a host name. Without any pattern the list is loopback only
(:data:`LOOPBACK`). Everything here is pure: parse with :func:`parse_pattern`, decide
with :meth:`AllowList.refusal`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["LOOPBACK", "AllowList", "Pattern", "parse_pattern"]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The allow-list without ``--controller-allow``: this machine only.
LOOPBACK = ("127.0.0.0/8", "::1", "localhost")

_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Pattern:
    """One allowed host: a network, or a name (``wildcard``: any host under ``name``)."""

    text: str
    network: IPNetwork | None = None
    name: str | None = None
    wildcard: bool = False
    port: int | None = None  # None: any port

    def matches(self, host: str, port: int) -> bool:
        """Whether ``host`` (lower case, no brackets) on ``port`` is allowed by this pattern."""
        if self.port is not None and port != self.port:
            return False
        address = _address(host)
        if self.network is not None:
            return address is not None and address in self.network
        if address is not None or self.name is None:
            return False
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _host_name(text: str, pattern: str) -> str:
    name = text.lower().removesuffix(".")
    if not name or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise ValueError(
            f"{pattern!r}: expected an IP network, a host name, or *.domain (with an optional :port)"
        )
    return name


def parse_pattern(text: str) -> Pattern:
    """One ``--controller-allow`` value.

    :raises ValueError: not a network, host, ``*.domain`` glob or one of them with a port.
    """
    raw = text.strip()
    if not raw:
        raise ValueError("an empty pattern")
    if "/" in raw and "://" in raw:
        raise ValueError(f"{raw!r}: expected a host, not a URL (e.g. rc.example.com:8443)")
    try:
        return Pattern(raw, network=ipaddress.ip_network(raw, strict=False))
    except ValueError:
        pass
    host, port = raw, None
    if raw.startswith("["):  # [v6]:port or [v6]
        end = raw.find("]")
        rest = raw[end + 1 :] if end > 0 else "?"
        if end < 0 or (rest and not rest.startswith(":")):
            raise ValueError(f"{raw!r}: expected [IPv6 address]:port")
        host, port = raw[1:end], rest[1:] if rest else None
    elif raw.count(":") == 1:
        host, port = raw.split(":")
    number = None
    if port is not None:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{raw!r}: the port must be a number from 1 to 65535")
        number = int(port)
    if (address := _address(host)) is not None:
        return Pattern(raw, network=ipaddress.ip_network(address), port=number)
    if host.startswith("*."):
        return Pattern(raw, name=_host_name(host[2:], raw), wildcard=True, port=number)
    if "*" in host:
        raise ValueError(f"{raw!r}: '*' may only stand for the first labels, as in *.example.com")
    return Pattern(raw, name=_host_name(host, raw), port=number)


@dataclass(frozen=True)
class AllowList:
    """The controller hosts the task runner may call (see the module docstring)."""

    patterns: tuple[Pattern, ...]

    @classmethod
    def parse(cls, texts: Iterable[str] = ()) -> AllowList:
        """The list of ``texts``; none given: :data:`LOOPBACK`.

        :raises ValueError: a pattern that does not parse (its message names it).
        """
        given = tuple(texts)
        return cls(tuple(parse_pattern(t) for t in (given or LOOPBACK)))

    def refusal(self, url: str) -> str | None:
        """Why a controller at ``url`` may not be called; None when it may."""
        try:
            parts = urlsplit(url)
            port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
            host = (parts.hostname or "").lower().removesuffix(".")
        except ValueError:
            port, host = None, ""
        if not host or port is None:
            return f"the controller URL {url!r} has no host and port to check"
        if any(p.matches(host, port) for p in self.patterns):
            return None
        allowed = ", ".join(p.text for p in self.patterns)
        shown = f"[{host}]" if ":" in host else host
        return (
            f"controller {shown}:{port} is not allowed on this server"
            f" (allowed: {allowed}; the operator adds hosts with --controller-allow)"
        )
