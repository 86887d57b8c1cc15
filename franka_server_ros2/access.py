"""Who may drive the robot through the server: an optional shared token and an optional client list.

The original franka_server has no protection: whoever reaches its port moves the arm. On the default
address (127.0.0.1) only this machine does; any other address is an explicit choice (`host`), and the
server says so at start-up. Two optional guards, checked before any route runs:

- a shared **token**, carried where a client that cannot change its requests can still put it: in the
  URL's path, `http://host:5000/<token>/` (HIL-SERL's stock env posts to `SERVER_URL + "getstate"`, so
  `SERVER_URL = "http://host:5000/<token>/"` works unaltered), or in a header,
  `Authorization: Bearer <token>`. Parameter `access_token`, or the environment variable
  FRANKA_SERVER_TOKEN when the parameter is empty. A request without it gets 401.
- **allowed clients**: addresses or networks (`192.168.1.20`, `192.168.1.0/24`); a request from
  anywhere else gets 403. Parameter `allowed_clients`.

A refused request reaches no route: nothing is published, called or moved.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.parameter import Parameter

TOKEN_ENV = "FRANKA_SERVER_TOKEN"
MIN_TOKEN_LENGTH = 16
TOKEN_CHARACTERS = re.compile(r"^[A-Za-z0-9._~-]+$")  # unreserved URL characters: a path segment as is
REFUSAL_LOG_PERIOD = 10.0  # [s] one log line per client and reason in this period

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class AccessRule:
    token: str = ""  # '' = no token needed
    token_source: str = ""  # where the token came from, for the start-up line (never the token itself)
    allowed: tuple[Network, ...] = ()  # () = any client address

    @property
    def open(self) -> bool:
        return not self.token and not self.allowed


def parse_token(token: str, source: str) -> str:
    if not token:
        return ""
    if not TOKEN_CHARACTERS.match(token):
        raise ValueError(
            f"{source} may only hold letters, digits and . _ ~ - (it is a URL path segment); "
            "make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise ValueError(
            f"{source} is {len(token)} characters long, at least {MIN_TOKEN_LENGTH} are needed; "
            "make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"
        )
    return token


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    networks = []
    for entry in entries:
        text = entry.strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise ValueError(
                f"allowed_clients entry {text!r} is not an IP address or network (e.g. 192.168.1.20, 192.168.1.0/24)"
            ) from None
    return tuple(networks)


def make_rule(token: str, allowed_clients: Iterable[str], environ: dict[str, str] | None = None) -> AccessRule:
    """The rule from the parameters (and, for an empty `token`, the environment); ValueError says what is wrong."""
    environ = os.environ if environ is None else environ
    source = "parameter access_token"
    if not token and environ.get(TOKEN_ENV):
        token, source = environ[TOKEN_ENV], f"${TOKEN_ENV}"
    token = parse_token(token, source)
    return AccessRule(token=token, token_source=source if token else "", allowed=parse_networks(allowed_clients))


def declare_and_read(node) -> AccessRule:
    """Declare the server's access parameters on `node` and read them (ValueError for bad values)."""
    node.declare_parameter(
        "access_token",
        "",
        ParameterDescriptor(
            description=f"shared token clients must send (URL path prefix or Bearer header); '' = none "
            f"(then ${TOKEN_ENV}, if set)",
            read_only=True,
        ),
    )
    node.declare_parameter(
        "allowed_clients",
        Parameter.Type.STRING_ARRAY,
        ParameterDescriptor(description="client addresses or networks served; empty = any", read_only=True),
    )
    try:
        allowed = node.get_parameter("allowed_clients").value or []
    except ParameterUninitializedException:
        allowed = []
    return make_rule(node.get_parameter("access_token").value, allowed)


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine (127.0.0.0/8, ::1, localhost)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def binding_notice(host: str, port: int, rule: AccessRule) -> tuple[str, str] | None:
    """(level, line) the server logs at start-up about who can reach it; None on loopback without a rule."""
    guards = []
    if rule.token:
        address = "<this machine>" if host in ("0.0.0.0", "::") else host
        guards.append(
            f"only requests carrying the access token ({rule.token_source}) are served: "
            f"SERVER_URL http://{address}:{port}/<token>/ or header 'Authorization: Bearer <token>'"
        )
    if rule.allowed:
        guards.append(f"only clients in allowed_clients {[str(n) for n in rule.allowed]} are served")
    if is_loopback(host):
        return ("info", "access: " + "; ".join(guards)) if guards else None
    where = "every interface of this machine" if host in ("0.0.0.0", "::") else host
    if guards:
        return "info", f"serving beyond this machine (host:={host}, {where}): " + "; ".join(guards)
    return (
        "warn",
        f"serving beyond this machine (host:={host}, {where}) with no access control: anyone who can reach "
        f"port {port} can move the robot. Set access_token and/or allowed_clients (docs/two_hosts.md)",
    )


class AccessGuard:
    """WSGI middleware: the rule is checked before the application sees the request."""

    def __init__(self, app, rule: AccessRule, warn: Callable[[str], None]) -> None:
        self.app = app
        self.rule = rule
        self._prefix = f"/{rule.token}" if rule.token else ""
        self._warn = warn
        self._last_logged: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        client = environ.get("REMOTE_ADDR", "")
        if self.rule.allowed and not self._client_allowed(client):
            return self._refuse(
                environ, start_response, 403, client, f"client address {client} is not in allowed_clients"
            )
        if self.rule.token and not self._token_given(environ):
            return self._refuse(
                environ,
                start_response,
                401,
                client,
                "this server needs its access token: put it in the URL (http://host:port/<token>/) "
                "or send 'Authorization: Bearer <token>'",
            )
        return self.app(environ, start_response)

    def _client_allowed(self, client: str) -> bool:
        try:
            address = ipaddress.ip_address(client.split("%")[0])
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.rule.allowed)

    def _token_given(self, environ) -> bool:
        """A token as the first path segment (moved from PATH_INFO to SCRIPT_NAME), or in a header."""
        path = environ.get("PATH_INFO", "")
        head, sep, _ = path[1:].partition("/")
        if path.startswith("/") and hmac.compare_digest(head.encode(), self.rule.token.encode()):
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + self._prefix
            environ["PATH_INFO"] = path[len(self._prefix) :] or "/"
            return True
        scheme, _, credentials = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), self.rule.token.encode()
        )

    def _refuse(self, environ, start_response, status: int, client: str, message: str):
        self._log(client, status, environ.get("REQUEST_METHOD", ""), message)
        body = json.dumps({"error": message}).encode()
        headers = [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            # the request's body is not read: the connection must not carry another request
            ("Connection", "close"),
        ]
        if status == 401:
            headers.append(("WWW-Authenticate", 'Bearer realm="franka_server_ros2"'))
        start_response(f"{status} {'Unauthorized' if status == 401 else 'Forbidden'}", headers)
        return [body]

    def _log(self, client: str, status: int, method: str, message: str) -> None:
        """One line per client and status every REFUSAL_LOG_PERIOD (a client retrying at 10 Hz must not flood
        the log); the path is not logged, it may hold a mistyped token."""
        now = time.monotonic()
        with self._lock:
            last = self._last_logged.get((client, status))
            if last is not None and now - last < REFUSAL_LOG_PERIOD:
                return
            self._last_logged[(client, status)] = now
        self._warn(f"refused a {method} request from {client} ({status}): {message}")


__all__ = [
    "AccessGuard",
    "AccessRule",
    "TOKEN_ENV",
    "binding_notice",
    "declare_and_read",
    "is_loopback",
    "make_rule",
]
