"""Where the studio may send a request for an engine: the base-URL policy, checked where the socket opens.

Whoever may add contestants (a researcher) chooses a persona's ``engine_config.base_url``. The studio
sends it prompts and, if the config names one, an API key. So a base URL is data to check, not to trust.
- **Shape.** It must be ``http(s)://host[:port]/...``, with no credentials (``user:pass@``), query or
  fragment.
- **Public addresses only.** Every address the host resolves to must be *public* (``ipaddress``: global).
  Private, loopback, link-local, multicast, reserved and unspecified addresses fail. IPv4-mapped IPv6 is
  judged as the IPv4 address.
- **Operator exceptions.** ``VIBESTUDIO_ENGINE_ALLOWED_HOSTS`` allows host names, addresses or CIDR
  ranges, each optionally with ``:port``. ``VIBESTUDIO_ENGINE_PUBLIC_URLS=false`` refuses public addresses
  too.
- **Checked twice.** First when a contestant is registered or an engine built (``check_url``): a clear
  error, nothing written. Then again inside the HTTP client at connect time (``GuardedBackend``). The
  client resolves the name itself, checks each address and connects to the address it checked. So DNS
  rebinding fails: a name that is public at registration and 127.0.0.1 a second later is refused. TLS
  still verifies the certificate of the *name*.
- **No redirects, no proxies.** Clients never follow redirects. They take no proxy settings from the
  environment (``trust_env`` off), since a proxy would connect out of this check's reach.

What it does not cover: a host the operator allowed by *name* is trusted with whatever that name resolves
to. A server at an allowed address may itself fetch elsewhere. URLs the studio builds itself are not user
data and skip the policy (``trusted=True``); an example is a managed vLLM server it started on loopback.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from vibestudio.common.settings import get_settings, variable_name

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Net = ipaddress.IPv4Network | ipaddress.IPv6Network


class UrlRefused(ValueError):
    """A base URL the policy refuses; the message says which rule, never the key."""


@dataclass(frozen=True)
class Rule:
    """One entry of the operator's allow-list: a network or a host name, optionally one port only."""

    network: Net | None
    host: str | None
    port: int | None

    def allows(self, host: str, ip: IP | None, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host is not None:
            return host.lower().rstrip(".") == self.host
        return ip is not None and self.network is not None and ip in self.network


def parse_rules(text: str | None) -> list[Rule]:
    """``VIBESTUDIO_ENGINE_ALLOWED_HOSTS`` as rules; a malformed entry is an error naming it (operator data)."""
    rules = []
    for raw in (text or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        host, port = entry, None
        if entry.startswith("["):  # [v6]:port or [v6]
            close = entry.find("]")
            host, rest = entry[1:close], entry[close + 1 :]
            port = int(rest[1:]) if rest.startswith(":") else None
        elif entry.count(":") == 1:
            host, _, p = entry.partition(":")
            port = int(p)
        try:
            net: Net | None = ipaddress.ip_network(host, strict=False)
            rules.append(Rule(net, None, port))
        except ValueError:
            if not host or "/" in host:
                raise ValueError(
                    f"{variable_name('engine_allowed_hosts')}: entry {entry!r} is neither a host name, an "
                    "address nor a CIDR range"
                ) from None
            rules.append(Rule(None, host.lower().rstrip("."), port))
    return rules


def _plain(ip: IP) -> IP:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_public(ip: IP) -> bool:
    """A globally routable unicast address (what any web client may reach anyway)."""
    ip = _plain(ip)
    return bool(
        ip.is_global
        and not (
            ip.is_private
            or ip.is_loopback
            or ip.is_link_local
            or ip.is_multicast
            or ip.is_reserved
            or ip.is_unspecified
        )
    )


def address_allowed(host: str, ip: IP | None, port: int, rules: list[Rule] | None = None) -> bool:
    """Whether the policy lets a request to ``host`` reach address ``ip`` on ``port``."""
    rules = parse_rules(get_settings().engine_allowed_hosts) if rules is None else rules
    if ip is not None:
        ip = _plain(ip)
    if any(rule.allows(host, ip, port) for rule in rules):
        return True
    return ip is not None and is_public(ip) and get_settings().engine_public_urls


def _literal(host: str) -> IP | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[IP]:
    """Every address ``host`` resolves to (a literal address is itself); OSError when it does not resolve."""
    literal = _literal(host)
    if literal is not None:
        return [literal]
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def split_url(url: object, field: str = "base_url") -> tuple[str, str, int]:
    """(scheme, host, port) of a base URL; UrlRefused naming ``field`` when it is not a plain http(s) URL."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise UrlRefused(f"engine_config field {field!r} must be an http(s) URL")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UrlRefused(f"engine_config field {field!r} is not a valid URL") from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise UrlRefused(
            f"engine_config field {field!r} must not hold credentials (user:password@); name a key with "
            "'api_key_env'"
        )
    if parts.query or parts.fragment:
        raise UrlRefused(f"engine_config field {field!r} must not have a query or fragment")
    if not parts.hostname or any(c.isspace() for c in url):
        raise UrlRefused(f"engine_config field {field!r} has no host")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def check_url(url: object, field: str = "base_url", strict: bool = True) -> None:
    """Raise UrlRefused when the policy refuses ``url``. ``strict=False`` (registration) accepts a host name
    that does not resolve here (it is checked again when a request connects)."""
    _, host, port = split_url(url, field)
    rules = parse_rules(get_settings().engine_allowed_hosts)
    if any(rule.host is not None and rule.allows(host, None, port) for rule in rules):
        return
    try:
        addresses = resolve(host, port)
    except OSError:
        if strict:
            raise UrlRefused(f"engine_config field {field!r}: its host does not resolve") from None
        return
    refused = [ip for ip in addresses if not address_allowed(host, ip, port, rules)]
    if refused:
        raise UrlRefused(_refusal(field, refused[0]))


def _refusal(field: str, ip: IP) -> str:
    what = "a public" if is_public(ip) else "a loopback, private, link-local or reserved"
    return (
        f"engine_config field {field!r} points at {what} address, which the studio does not reach unless the "
        f"operator allows it in {variable_name('engine_allowed_hosts')}"
    )


class GuardedBackend(httpcore.SyncBackend):
    """httpcore's socket backend that resolves the host itself, checks every address against the policy and
    connects only to an address it checked (closes the gap a DNS rebinding would use)."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = resolve(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve the host ({exc})") from exc
        rules = parse_rules(get_settings().engine_allowed_hosts)
        allowed = [ip for ip in addresses if address_allowed(host, ip, port, rules)]
        if not allowed:
            raise httpcore.ConnectError(
                "refused by the engine URL policy: " + _refusal("base_url", addresses[0])
            )
        error: Exception | None = None
        for ip in allowed:
            try:
                return super().connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                error = exc
        assert error is not None
        raise error


def client(timeout: float | httpx.Timeout, trusted: bool = False) -> httpx.Client:
    """An HTTP client for engine URLs: the policy at every connect (unless ``trusted``: a URL the studio
    built), no redirects, no proxies from the environment."""
    transport = httpx.HTTPTransport(trust_env=False) if not trusted else None
    if transport is not None:
        transport._pool._network_backend = GuardedBackend()  # httpcore has no public hook for it
    return httpx.Client(timeout=timeout, transport=transport, follow_redirects=False, trust_env=False)
