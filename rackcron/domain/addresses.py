"""Network addresses as rackcron's listeners see them: whether a listen address stays on
the machine, which client a peer address counts as, and which names a request may give
in its ``Host`` header.

A "client" is its address as the kernel reports it: an IPv4 address, or an IPv6 /64
network (one host commonly holds a whole /64), an IPv4-mapped IPv6 address counting as
its IPv4 address. Clients behind one NAT count as one.

The ``Host`` rule (:class:`HostCheck`) is the defence against DNS rebinding: a web page
at ``attacker.example`` can have its name resolve to 127.0.0.1 and then read a loopback
server as its own origin, but the browser still sends ``Host: attacker.example``. So a
listener that checks answers only to loopback names (``localhost``, names under
``.localhost``, which RFC 6761 reserves and browsers resolve to loopback themselves,
127.0.0.0/8 and ``::1``), its own listen address, and the names it was given; the port
is not compared (an SSH tunnel or a proxy may change it). A listener on loopback always
checks, and accepts a request without ``Host`` (which no browser sends); beyond loopback
it checks only when given names, and then requires one of them.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

__all__ = ["HostCheck", "client_key", "host_name", "is_loopback"]

#: A ``Host`` header: a name or an IPv4 address, or an IPv6 address in brackets, each
#: with an optional port.
_HOST_HEADER = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::[0-9]{1,5})?"
)
#: A DNS name as ``--http-allowed-host`` takes it: labels of letters, digits and hyphens.
_DNS_NAME = re.compile(
    r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
    r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a listen address) is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def client_key(host: str) -> str:
    """The client that ``host`` (a peer address) counts as; anything that is not an
    IP address counts as itself."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _canonical(host: str) -> str:
    """``host`` (a name or an address, an IPv6 address bare) in one spelling per meaning:
    a name in lower case, without the trailing dot of its absolute form (``localhost.``)."""
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return host.lower().removesuffix(".")


def host_name(value: str) -> str:
    """``value`` (a DNS name, an IP address, an IPv6 address bare or in brackets) as
    :class:`HostCheck` compares it.

    :raises ValueError: anything else (a port, a URL, a wildcard), saying what is expected.
    """
    bare = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    try:
        return ipaddress.ip_address(bare).compressed
    except ValueError:
        pass
    if bare is value and _DNS_NAME.fullmatch(value):
        return value.lower()
    raise ValueError(
        f"expected a host name or an IP address (no port, scheme or wildcard), got {value!r}"
    )


@dataclass(frozen=True)
class HostCheck:
    """The ``Host`` names a listener on ``listen`` answers to, beside loopback names:
    ``names`` (canonical, as :func:`host_name` gives them); see the module docstring."""

    listen: str
    names: frozenset[str] = frozenset()

    @property
    def active(self) -> bool:
        """Whether the ``Host`` header is checked at all."""
        return is_loopback(self.listen) or bool(self.names)

    def accepts(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header (None or empty: none) is answered."""
        if not self.active:
            return True
        if not header:
            return is_loopback(self.listen)
        found = _HOST_HEADER.fullmatch(header)
        if found is None:
            return False
        host = _canonical(found["v6"] or found["name"])
        if found["v6"] is not None and ":" not in host:
            return False  # brackets hold an IPv6 address only
        return (
            host in self.names
            or host == _canonical(self.listen)
            or host == "localhost"
            or host.endswith(".localhost")
            or is_loopback(host)
        )
