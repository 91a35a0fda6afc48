"""Which addresses an http(s) source may reach, and URLs as they may be shown.

Sources are untrusted input (storage/fetch.py): unless private addresses are allowed, every address a host
resolves to must be public, judged again on every redirect hop and on the socket actually connected (which
closes the DNS-rebinding gap between our lookup and the client's own); an IPv6 address that carries an IPv4
one (IPv4-mapped, 6to4, Teredo, NAT64) is judged by that IPv4 address too. URLs are shown without user info and
query, which may hold credentials or signatures.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlparse

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from core.errors import (
    ForbiddenSource,
    SourceUnreachable,
)

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# RFC 6052's well-known prefix: a NAT64 gateway delivers to the IPv4 address in the last 32 bits
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def shown(url: str) -> str:
    """url for messages and logs: without user info and query, which may carry credentials or signatures."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parsed.port}" if parsed.port else ""
    except ValueError:
        port = ""
    query = "?..." if parsed.query else ""
    return f"{parsed.scheme}://{host}{port}{parsed.path}{query}"


def scrubbed(text: str, url: str) -> str:
    """text (e.g. an HTTP client's error message, which quotes the request path) without url's password and
    query, which may carry credentials or signatures."""
    parsed = urlparse(url)
    for secret in (parsed.query, parsed.password):
        if secret:
            text = text.replace(secret, "...")
    return text


def carried_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address a 6to4, Teredo (its client, un-XORed) or NAT64 address delivers to, with the kind."""
    if address.sixtofour is not None:
        return "6to4", address.sixtofour
    if address.teredo is not None:
        return "Teredo", address.teredo[1]
    if address in _NAT64:
        return "NAT64", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def forbidden_reason(address: IPAddress) -> str | None:
    """Why address may not be fetched from when private addresses are refused, or None if it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            # the IPv4 address itself, written in IPv6 notation
            address = address.ipv4_mapped
        elif (carried := carried_ipv4(address)) is not None:
            kind, ipv4 = carried
            reason = forbidden_reason(ipv4)
            if reason is not None:
                return f"{reason} ({ipv4} in a {kind} address)"
    checks = (
        # the specific flags first: Python's is_private also covers several of them
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("unspecified", address.is_unspecified),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
        # catches shared (100.64/10), documentation and other special ranges the flags above miss
        ("non-global", not address.is_global),
    )
    return next((name for name, hit in checks if hit), None)


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address host resolves to (IP literals resolve to themselves)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise SourceUnreachable(f"host {host!r} does not resolve: {exc}") from exc
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


class AddressPolicy:
    """Which hosts HTTP sources may come from."""

    def __init__(self, allow_private: bool, exempt: Sequence[IPNetwork] = ()) -> None:
        self.allow_private = allow_private
        self.exempt = tuple(exempt)

    def check_address(self, address: IPAddress, where: str) -> None:
        if self.allow_private or any(address in net for net in self.exempt):
            return
        reason = forbidden_reason(address)
        if reason is not None:
            raise ForbiddenSource(
                f"{where}: host address {address} is {reason}; "
                "set REELGEN_ALLOW_PRIVATE_HTTP=1 to fetch from private networks"
            )

    def check_url(self, url: str) -> None:
        parsed = urlparse(url)
        if parsed.scheme.lower() not in ("http", "https") or not parsed.hostname:
            raise ForbiddenSource(
                f"{shown(url)}: only http(s) URLs with a host may be fetched (or redirected to)"
            )
        try:
            port = parsed.port or (443 if parsed.scheme.lower() == "https" else 80)
        except ValueError as exc:
            raise ForbiddenSource(f"{shown(url)}: bad port: {exc}") from exc
        if self.allow_private:
            return
        for address in resolve(parsed.hostname, port):
            self.check_address(address, shown(url))

    def check_peer(self, sock: socket.socket, host: str) -> None:
        """Vet the address a socket actually connected to (the HTTP client resolved the host again)."""
        if self.allow_private:
            return
        peer = ipaddress.ip_address(str(sock.getpeername()[0]).split("%")[0])
        self.check_address(peer, f"connection to {host}")


def guarded_adapter(policy: AddressPolicy, adopt: Callable[[socket.socket], None]) -> HTTPAdapter:
    """A requests adapter whose every new connection is vetted by policy before a byte is sent, then handed to
    adopt (the downloader's watchdog, which may have to shut it down).

    This is what closes DNS rebinding: a host that resolved to a public address for check_url and to a private
    one for the client's own lookup is refused here. It overrides urllib3's connection factory (`_new_conn`),
    a private hook, stable since urllib3 1.x; tests exercise it.
    """

    def vetted(sock: socket.socket, host: str) -> socket.socket:
        try:
            policy.check_peer(sock, host)
        except BaseException:
            sock.close()
            raise
        adopt(sock)
        return sock

    class Connection(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return vetted(super()._new_conn(), self.host)

    class TLSConnection(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return vetted(super()._new_conn(), self.host)

    class Pool(HTTPConnectionPool):
        ConnectionCls = Connection

    class TLSPool(HTTPSConnectionPool):
        ConnectionCls = TLSConnection

    class Adapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": Pool, "https": TLSPool}

    return Adapter(max_retries=0)
