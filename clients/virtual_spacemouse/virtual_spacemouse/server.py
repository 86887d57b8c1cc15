"""HTTP access to a franka_server_ros2's teleop routes (`GET /spacemouse`, `GET /keys`) and to the list of
its world's servers (`GET /cameras`), standard library only. One connection per object (HTTP/1.1
keep-alive); an object is used by one thread."""

from __future__ import annotations

import http.client
import json
import os
import sys
import urllib.parse
from typing import Any

URL_ENV = "FRANKA_SIM_URL"
DEVICE_URLS_ENV = "FRANKA_SIM_SPACEMOUSE_URLS"
DEFAULT_URL = "http://127.0.0.1:5000"
GRACE_S = 2.0  # [s] how much longer than the server's long poll the socket waits


class ServerUnavailable(Exception):
    """The server could not be reached, dropped the connection, or answered something unusable."""


def warn(message: str) -> None:
    print(f"virtual_spacemouse: {message}", file=sys.stderr, flush=True)


def server_url() -> str:
    """`$FRANKA_SIM_URL`, or the default."""
    return os.environ.get(URL_ENV, "").strip() or DEFAULT_URL


class Server:
    """One franka_server_ros2 at `url` (a path prefix such as an access token is kept)."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self._connection: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def get(self, route: str, query: dict[str, Any] | None = None, wait: float = 0.0) -> Any:
        """The JSON answer of `GET /<route>?<query>`; the socket waits `wait` s longer than usual."""
        path = f"{self._prefix}/{route}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        for attempt in (0, 1):  # a kept-alive connection the server has closed fails once: reconnect
            if self._connection is None:
                kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
                self._connection = kind(self._host, self._port, timeout=wait + GRACE_S)
            self._connection.timeout = wait + GRACE_S
            if self._connection.sock is not None:
                self._connection.sock.settimeout(wait + GRACE_S)
            try:
                self._connection.request("GET", path)
                response = self._connection.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt == 0 and isinstance(exc, (http.client.RemoteDisconnected, ConnectionResetError)):
                    continue
                raise ServerUnavailable(f"{self.url}: {exc}") from exc
            if response.status != 200:
                raise ServerUnavailable(f"{self.url}/{route}: HTTP {response.status} {body[:200]!r}")
            try:
                return json.loads(body)
            except ValueError as exc:
                raise ServerUnavailable(f"{self.url}/{route}: not JSON") from exc
        raise ServerUnavailable(f"{self.url}: connection closed")  # not reached

    def spacemouse(self, after: int | None, timeout: float) -> dict[str, Any]:
        """`GET /spacemouse`: {"seq", "axes", "buttons", "age_s"}."""
        query = {"timeout": f"{timeout:g}"} if after is None else {"after": after, "timeout": f"{timeout:g}"}
        answer = self.get("spacemouse", query, timeout)
        if not isinstance(answer, dict) or not {"seq", "axes", "buttons"} <= set(answer):
            raise ServerUnavailable(f"{self.url}/spacemouse: unexpected answer {answer!r:.200}")
        return answer

    def keys(self, after: int, timeout: float) -> dict[str, Any]:
        """`GET /keys`: {"seq", "events": [{"seq", "key", "time"}]}."""
        answer = self.get("keys", {"after": after, "timeout": f"{timeout:g}"}, timeout)
        if not isinstance(answer, dict) or not {"seq", "events"} <= set(answer):
            raise ServerUnavailable(f"{self.url}/keys: unexpected answer {answer!r:.200}")
        return answer

    def world_servers(self) -> list[str]:
        """The other servers of this server's simulated world (`GET /cameras`'s "servers")."""
        servers = self.get("cameras").get("servers", [])
        return [s for s in servers if isinstance(s, str) and s.startswith(("http://", "https://"))]


def device_urls() -> list[str]:
    """The servers whose SpaceMouse state becomes a device: `$FRANKA_SIM_SPACEMOUSE_URLS` (comma separated),
    or `$FRANKA_SIM_URL` followed by the other servers of its world (object_handover: left, then right)."""
    explicit = [u.strip() for u in os.environ.get(DEVICE_URLS_ENV, "").split(",") if u.strip()]
    if explicit:
        return explicit
    url = server_url()
    server = Server(url)
    try:
        others = server.world_servers()
    except ServerUnavailable as exc:
        warn(f"cannot list the world's servers ({exc}); one SpaceMouse, for {url}")
        others = []
    finally:
        server.close()
    same = lambda a, b: a.rstrip("/") == b.rstrip("/")  # noqa: E731
    return [url, *(o for o in others if not same(o, url))]
