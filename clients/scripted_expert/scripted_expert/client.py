"""HTTP to one franka_server_ros2 (standard library): the robot's state, the task's ground truth, and the
SpaceMouse and keys of the teleop routes. One keep-alive connection per object, used by one thread."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from typing import Any


class ServerError(Exception):
    """The server could not be reached or answered an error."""


class Server:
    def __init__(self, url: str, timeout: float = 10.0) -> None:
        parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self._kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._host, self._port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._connection: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def request(self, method: str, route: str, body: Any = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        for attempt in (0, 1):  # a kept-alive connection the server closed fails once: reconnect
            if self._connection is None:
                self._connection = self._kind(self._host, self._port, timeout=self._timeout)
            try:
                self._connection.request(method, f"{self._prefix}/{route}", body=data, headers=headers)
                response = self._connection.getresponse()
                return response.status, response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt == 0 and isinstance(exc, (http.client.RemoteDisconnected, ConnectionResetError)):
                    continue
                raise ServerError(f"{self.url}{route}: {exc}") from exc
        raise ServerError(f"{self.url}{route}: connection closed")  # not reached

    def json(self, method: str, route: str, body: Any = None) -> Any:
        status, data = self.request(method, route, body)
        if status != 200:
            raise ServerError(f"{method} {self.url}{route}: HTTP {status} {data[:300]!r}")
        return json.loads(data)

    def ok(self, route: str, body: Any = None) -> str:
        status, data = self.request("POST", route, body)
        if status != 200:
            raise ServerError(f"POST {self.url}{route}: HTTP {status} {data[:300]!r}")
        return data.decode()

    # the routes the expert uses
    def state(self) -> dict:
        return self.json("POST", "getstate")

    def health(self) -> dict:
        """GET /health's body, whether the server is ok (200) or not (503)."""
        status, data = self.request("GET", "health")
        if status not in (200, 503):
            raise ServerError(f"GET {self.url}health: HTTP {status} {data[:300]!r}")
        return json.loads(data)

    def task(self) -> dict:
        return self.json("GET", "task")

    def spacemouse(self, axes, buttons) -> None:
        self.ok("spacemouse", {"axes": [float(a) for a in axes], "buttons": [int(b) for b in buttons]})

    def key(self, key: str) -> None:
        self.ok("keys", {"key": key})
