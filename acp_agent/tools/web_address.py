"""Where ``web_fetch`` may connect: every address a host resolves to is checked, and the
connection goes to the address that was checked.

Theory of operation
-------------------
A page the model fetches may be chosen by whoever wrote the last page it read, so a fetch
must not become a way into what only this machine can reach: its loopback services, the
private network, link-local peers and the cloud's metadata service (169.254.169.254,
``fd00:ec2::254``), which hands out credentials. ``refusal`` names what an address is when it
is one of those (anything not globally routable: loopback, private, link-local, shared
``100.64/10``, reserved, unspecified, multicast; an IPv4-mapped IPv6 address is judged as its
IPv4 address), else ``None``.

The check is made after name resolution (a name may point anywhere) on *every* address the
name resolves to, and the request is then sent to the first of them, by address, with the
``Host`` header and the TLS server name (SNI, and so the certificate check) set to the name:
a second resolution that answers otherwise (DNS rebinding) is never made. Redirects are
followed by hand in ``web_fetch.py``, each hop checked again. ``WebFetchSettings.
allow_private`` lifts the refusal (in every mode), not the pinning. The resolver is a seam
(``Resolver``): tests map names to the addresses they want; the default asks the system
(``getaddrinfo``). So is the judgement (``Judge``, default ``refusal``): only loopback exists
where the tests run, so a test that needs an address that is allowed has its judge allow the
test server's.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable

import anyio

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
Judge = Callable[[IPAddress], "str | None"]
"""What an address is when it is refused (``refusal``), else ``None``."""
METADATA = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack ...
        ipaddress.ip_address("169.254.170.2"),  # AWS ECS task credentials
        ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    }
)


class AddressRefused(Exception):
    """The host resolves to an address ``web_fetch`` does not connect to."""


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    answers = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(str(sockaddr[0]).split("%")[0]) for *_, sockaddr in answers]


def refusal(address: IPAddress) -> str | None:
    """What ``address`` is when ``web_fetch`` refuses it (``"a loopback address"`` ...)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return refusal(address.ipv4_mapped)
    if address in METADATA:
        return "a cloud metadata address"
    for kind, test in (
        ("a loopback", address.is_loopback),
        ("a link-local", address.is_link_local),
        ("an unspecified", address.is_unspecified),
        ("a multicast", address.is_multicast),
        ("a private", address.is_private),
    ):
        if test:
            return f"{kind} address"
    return None if address.is_global else "a non-public address"


async def checked_address(
    host: str,
    port: int,
    *,
    allow_private: bool,
    resolve: Resolver = system_resolver,
    judge: Judge = refusal,
) -> IPAddress:
    """The address to connect to for ``host``: ``host`` itself when it is an address, else
    the first it resolves to; ``AddressRefused`` when any of them is refused (unless
    ``allow_private``), ``OSError`` when it does not resolve."""
    try:
        addresses: list[IPAddress] = [ipaddress.ip_address(host.strip("[]"))]
        literal = True
    except ValueError:
        addresses, literal = await resolve(host, port), False
    if not addresses:
        raise OSError(f"{host} resolves to no address")
    for address in addresses if not allow_private else ():
        if (kind := judge(address)) is not None:
            what = f"{host} is {kind}" if literal else f"{host} resolves to {address}, {kind}"
            raise AddressRefused(
                f"{what}: loopback, private, link-local and cloud metadata addresses "
                "are not fetched (the config file's [web_fetch] allow_private = true allows them)"
            )
    return addresses[0]
