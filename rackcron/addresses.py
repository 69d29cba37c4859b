"""Network addresses as rackcron's listeners see them: whether a listen address stays on
the machine, and which client a peer address counts as.

A "client" is its address as the kernel reports it: an IPv4 address, or an IPv6 /64
network (one host commonly holds a whole /64), an IPv4-mapped IPv6 address counting as
its IPv4 address. Clients behind one NAT count as one.
"""

from __future__ import annotations

import ipaddress

__all__ = ["client_key", "is_loopback"]


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
