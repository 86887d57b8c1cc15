"""HTTP access to the simulation's camera routes (``GET /cameras``, ``GET /frame/<name>``), stdlib only."""

from __future__ import annotations

import enum
import http.client
import json
import logging
import os
import urllib.parse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._shm import RingInfo

log = logging.getLogger("virtual_realsense")

URL_ENV = "FRANKA_SIM_URL"
DEFAULT_URL = "http://127.0.0.1:5000"
RESPONSE_GRACE_S = 1.0  # [s] how much longer than the server's long-poll timeout the socket waits

# X-Frame-Encoding -> (bytes per pixel, numpy dtype string, channels)
ENCODINGS: dict[str, tuple[int, str, int]] = {
    "bgr8": (3, "uint8", 3),
    "rgb8": (3, "uint8", 3),
    "16UC1": (2, "<u2", 1),
    "mono16": (2, "<u2", 1),
}


class ServerUnavailable(Exception):
    """The server could not be reached, dropped the connection, or answered something unusable."""


@dataclass(frozen=True)
class CameraSpec:
    """One simulated camera as ``GET /cameras`` lists it."""

    name: str
    serial: str
    width: int
    height: int
    fps: int
    depth: bool
    shm: RingInfo | None = field(default=None, compare=False)  # its shared-memory ring, where the server names one


@dataclass(frozen=True)
class CameraListing:
    """What ``GET /cameras`` answers: the server's own cameras and the other servers of the same world."""

    cameras: tuple[CameraSpec, ...]
    servers: tuple[str, ...]  # absolute URLs; empty when the server lists none (or predates the "servers" key)


@dataclass(frozen=True)
class RawFrame:
    """One frame as ``GET /frame/<name>`` delivers it."""

    stream: str  # "color" or "depth"
    seq: int
    width: int
    height: int
    encoding: str
    stamp: float  # [s] capture time, simulated clock
    wall_time: float  # [s] capture time, seconds since the Unix epoch
    data: bytearray


class Poll(enum.Enum):
    """What one ``GET /frame`` request came back with."""

    FRAME = 200
    TIMEOUT = 504  # no newer frame within the long-poll timeout
    NOT_READY = 503  # nothing rendered yet
    UNKNOWN_CAMERA = 404


def server_url() -> str:
    """The server address: ``$FRANKA_SIM_URL`` or the default."""
    return os.environ.get(URL_ENV, "").strip() or DEFAULT_URL


class SimServer:
    """Where the simulation's HTTP server is, and how to open a connection to it."""

    def __init__(self, url: str | None = None) -> None:
        self.url = (url or server_url()).rstrip("/")
        parts = urllib.parse.urlsplit(self.url if "://" in self.url else f"http://{self.url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{URL_ENV}={self.url!r} is not an http(s)://host[:port] address")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        # The same server however its address is spelled (trailing slash, host case, explicit default port).
        port = self._port or (443 if self._https else 80)
        self.key: tuple[str, str, int, str] = (parts.scheme, self._host.lower(), port, self._prefix)

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        """A new (not yet opened) connection to the server."""
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=timeout)

    def path(self, route: str, query: dict[str, str] | None = None) -> str:
        """The request target for ``route`` under the server's base path."""
        target = f"{self._prefix}{route}"
        return f"{target}?{urllib.parse.urlencode(query)}" if query else target

    def cameras(self, timeout: float = 3.0) -> list[CameraSpec]:
        """This server's cameras (``GET /cameras``); raises ServerUnavailable when the server cannot say."""
        return list(self.listing(timeout).cameras)

    def listing(self, timeout: float = 3.0) -> CameraListing:
        """``GET /cameras``: the cameras and the world's other servers; ServerUnavailable when the server cannot say."""
        conn = self.connect(timeout)
        try:
            conn.request("GET", self.path("/cameras"), headers={"Accept": "application/json"})
            response = conn.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise ServerUnavailable(f"{self.url}: {exc!r}") from exc
        finally:
            conn.close()
        if response.status != 200:
            raise ServerUnavailable(f"{self.url}/cameras answered HTTP {response.status}")
        from ._shm import parse_ring

        try:
            answer = json.loads(body)
            cameras = tuple(
                CameraSpec(
                    name=str(c["name"]),
                    serial=str(c["serial"]),
                    width=int(c["width"]),
                    height=int(c["height"]),
                    fps=int(c.get("fps", 0)),
                    depth=bool(c.get("depth", False)),
                    shm=parse_ring(c.get("shm"), answer.get("host")),
                )
                for c in answer["cameras"]
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ServerUnavailable(f"{self.url}/cameras answered an unexpected body: {exc!r}") from exc
        servers = answer.get("servers") or []
        if not isinstance(servers, list) or not all(isinstance(url, str) for url in servers):
            log.warning("virtual_realsense: %s/cameras lists servers that are not URLs: %r", self.url, servers)
            servers = [url for url in servers if isinstance(url, str)] if isinstance(servers, list) else []
        return CameraListing(cameras, tuple(servers))


class FrameClient:
    """Long-polls one camera's frames over one persistent (keep-alive) connection."""

    def __init__(self, server: SimServer, camera: str) -> None:
        self._server = server
        self._route = f"/frame/{urllib.parse.quote(camera, safe='')}"
        self._conn: http.client.HTTPConnection | None = None

    def fetch(self, stream: str, after: int, timeout: float) -> tuple[Poll, RawFrame | None]:
        """The first frame with seq > ``after`` (-1: the newest), waiting at most ``timeout`` seconds on the server."""
        timeout = max(0.0, timeout)
        seconds = f"{timeout:.3f}".rstrip("0").rstrip(".")  # "1", "0.25": parses as int or float
        query = {"after": str(after), "timeout": seconds, "stream": stream}
        status, headers, body = self._get(self._server.path(self._route, query), timeout + RESPONSE_GRACE_S)
        if status != 200:
            try:
                return Poll(status), None
            except ValueError:
                raise ServerUnavailable(f"{self._server.url}{self._route} answered HTTP {status}") from None
        return Poll.FRAME, _parse_frame(stream, headers, body)

    def close(self) -> None:
        """Drop the connection; a blocked ``fetch`` in another thread then fails with ServerUnavailable."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(2)  # socket.SHUT_RDWR: wakes a reader blocked in recv
            except OSError:
                pass
        conn.close()

    def _get(self, target: str, timeout: float) -> tuple[int, http.client.HTTPMessage, bytearray]:
        for attempt in range(2):
            reused = self._conn is not None and self._conn.sock is not None
            if self._conn is None:
                self._conn = self._server.connect(timeout)
            conn = self._conn
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request("GET", target)
                response = conn.getresponse()
                body = _read_body(response)
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                stale = isinstance(exc, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError))
                if attempt == 0 and reused and stale:
                    continue  # the server closed an idle keep-alive connection: retry once on a new one
                raise ServerUnavailable(f"{self._server.url}: {exc!r}") from exc
            return response.status, response.headers, body
        raise AssertionError("unreachable")


def _read_body(response: http.client.HTTPResponse) -> bytearray:
    """The whole body, read straight into one writable buffer when its length is known."""
    length = response.getheader("Content-Length")
    if length is None:
        return bytearray(response.read())
    buf = bytearray(int(length))
    view = memoryview(buf)
    pos = 0
    while pos < len(buf):
        n = response.readinto(view[pos:])
        if not n:
            raise http.client.IncompleteRead(bytes(view[:pos]), len(buf) - pos)
        pos += n
    response.read()  # lets http.client release the connection for the next request
    return buf


def _parse_frame(stream: str, headers: http.client.HTTPMessage, body: bytearray) -> RawFrame:
    try:
        width = int(headers["X-Frame-Width"])
        height = int(headers["X-Frame-Height"])
        encoding = headers.get("X-Frame-Encoding", "bgr8" if stream == "color" else "16UC1")
        frame = RawFrame(
            stream=stream,
            seq=int(headers["X-Frame-Seq"]),
            width=width,
            height=height,
            encoding=encoding,
            stamp=float(headers.get("X-Frame-Stamp", "nan")),
            wall_time=float(headers["X-Frame-Time"]),
            data=body,
        )
    except (TypeError, ValueError, KeyError) as exc:
        raise ServerUnavailable(f"frame with missing or malformed X-Frame-* headers: {exc!r}") from exc
    if encoding not in ENCODINGS:
        raise ServerUnavailable(f"frame with unsupported encoding {encoding!r}")
    expected = width * height * ENCODINGS[encoding][0]
    if len(body) != expected:
        raise ServerUnavailable(f"{encoding} frame {width}x{height} has {len(body)} bytes, expected {expected}")
    return frame
