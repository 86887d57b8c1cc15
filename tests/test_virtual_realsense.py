"""The virtual_realsense client (clients/virtual_realsense): the pyrealsense2 API HIL-SERL's RSCapture uses.

The stub HTTP server here stands in for franka_server_ros2's camera routes (``GET /cameras``,
``GET /frame/<name>``) only to test the client in isolation: it serves synthetic frames
whose pixels encode their sequence number. The end-to-end test against the real simulator lives elsewhere.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np
import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "clients" / "virtual_realsense"
sys.path.insert(0, str(PACKAGE_DIR))  # CI does not pip-install the client

import virtual_realsense as rs  # noqa: E402

WRIST = {"name": "wrist_1", "serial": "127122270146", "width": 1280, "height": 720, "fps": 15, "depth": False}
SIDE = {"name": "side", "serial": "128422271784", "width": 1280, "height": 720, "fps": 15, "depth": False}
DEPTH = {"name": "front depth", "serial": "233522074606", "width": 64, "height": 48, "fps": 15, "depth": True}
CAMERAS = [WRIST, SIDE, DEPTH]
RED = 200  # every colour pixel's R, except the marker below
MARK = (1, 2)  # (row, column) whose R is 7: proves row-major h x w x 3 order


def color_pixels(cam: dict, seq: int, generation: int) -> np.ndarray:
    """The stub's colour frame: B = seq mod 256, G = 50 + 10 * generation (which server run), R = 200."""
    img = np.empty((cam["height"], cam["width"], 3), np.uint8)
    img[..., 0] = seq % 256
    img[..., 1] = 50 + 10 * generation
    img[..., 2] = RED
    img[MARK[0], MARK[1], 2] = 7
    return img


def depth_pixels(cam: dict, seq: int) -> np.ndarray:
    """The stub's depth frame: every pixel 1000 + seq millimetres."""
    return np.full((cam["height"], cam["width"]), 1000 + seq, np.dtype("<u2"))


class StubCameraServer:
    """franka_server_ros2's camera routes, faked: renders a frame every ``period`` seconds while not paused.

    ``cameras`` is what it lists and serves; ``servers`` the other servers of its world that ``GET /cameras``
    names (None: no "servers" key, as on servers that predate it).
    """

    def __init__(
        self,
        port: int = 0,
        generation: int = 0,
        keep_alive: bool = True,
        period: float = 0.02,
        cameras: list[dict] | None = None,
        servers: list[str] | None = None,
    ) -> None:
        self.generation = generation
        self.cameras = CAMERAS if cameras is None else cameras
        self.servers = servers
        self.keep_alive = keep_alive
        self.period = period
        self.seq = -1  # newest rendered frame; -1: none yet
        self.wall_time = 0.0
        self.cond = threading.Condition()
        self.paused = False
        self.dead = False
        self.requests: list[tuple[float, str]] = []
        self._connections: set[socket.socket] = set()
        handler = type("Handler", (_StubHandler,), {"protocol_version": "HTTP/1.1" if keep_alive else "HTTP/1.0"})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.httpd.stub = self  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._threads = [
            threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True),
            threading.Thread(target=self._render, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _render(self) -> None:
        while not self.dead:
            time.sleep(self.period)
            with self.cond:
                if not self.paused and not self.dead:
                    self.seq += 1
                    self.wall_time = time.time()
                    self.cond.notify_all()

    def frame_requests(self, since: float = 0.0) -> int:
        return sum(1 for t, path in list(self.requests) if t >= since and path.startswith("/frame/"))

    def listing_requests(self) -> int:
        return sum(1 for _, path in list(self.requests) if urlsplit(path).path == "/cameras")

    def step(self) -> int:
        """Renders one frame now (for a paused stub) and returns its seq."""
        with self.cond:
            self.seq += 1
            self.wall_time = time.time()
            self.cond.notify_all()
            return self.seq

    def stop(self) -> None:
        """Dies like a killed server process: open connections drop without an answer."""
        with self.cond:
            self.dead = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        for conn in list(self._connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=5)


class _StubHandler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    @property
    def stub(self) -> StubCameraServer:
        return self.server.stub  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        self.stub._connections.add(self.connection)

    def finish(self) -> None:
        self.stub._connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def do_GET(self) -> None:
        stub = self.stub
        stub.requests.append((time.monotonic(), self.path))
        url = urlsplit(self.path)
        if stub.dead:
            return self._drop()
        if url.path == "/cameras":
            listing: dict = {"cameras": stub.cameras}
            if stub.servers is not None:
                listing["servers"] = stub.servers
            return self._reply(200, json.dumps(listing).encode())
        path = unquote(url.path)
        cam = next((c for c in stub.cameras if path == f"/frame/{c['name']}"), None)
        if not url.path.startswith("/frame/") or cam is None:
            return self._reply(404, json.dumps({"error": f"no camera {path}"}).encode())
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        after, timeout, kind = int(query.get("after", -1)), float(query.get("timeout", 5)), query.get("stream", "color")
        if kind == "depth" and not cam["depth"]:
            return self._reply(404, b'{"error": "no depth stream"}')
        with stub.cond:
            if after == -1 and stub.seq < 0:
                return self._reply(503, b'{"error": "no frame rendered yet"}')
            if not stub.cond.wait_for(lambda: stub.dead or stub.seq > after, timeout=timeout):
                return self._reply(504, b'{"error": "no new frame"}')
            seq, wall_time = stub.seq, stub.wall_time
        if stub.dead:
            return self._drop()
        pixels = depth_pixels(cam, seq) if kind == "depth" else color_pixels(cam, seq, stub.generation)
        headers = {
            "Content-Type": "application/octet-stream",
            "X-Frame-Seq": str(seq),
            "X-Frame-Width": str(cam["width"]),
            "X-Frame-Height": str(cam["height"]),
            "X-Frame-Encoding": "16UC1" if kind == "depth" else "bgr8",
            "X-Frame-Stamp": f"{seq * stub.period:.6f}",
            "X-Frame-Time": f"{wall_time:.6f}",
        }
        self._reply(200, pixels.tobytes(), headers)


@pytest.fixture(params=[True, False], ids=["keep-alive", "close"])
def stub(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[StubCameraServer]:
    """A stub server (HTTP/1.1 keep-alive like Flask's threaded server, and HTTP/1.0) that the client points at."""
    server = StubCameraServer(keep_alive=request.param)
    monkeypatch.setenv("FRANKA_SIM_URL", server.url)
    yield server
    server.stop()


def open_like_rscapture(serial: str, dim: tuple[int, int], depth: bool = False) -> tuple:
    """The calls RSCapture.__init__ makes (contract.md section 4), in its order."""
    assert serial in [d.get_info(rs.camera_info.serial_number) for d in rs.context().devices]
    pipe = rs.pipeline()
    cfg = rs.config()
    cfg.enable_device(serial)
    cfg.enable_stream(rs.stream.color, dim[0], dim[1], rs.format.bgr8, 15)
    if depth:
        cfg.enable_stream(rs.stream.depth, dim[0], dim[1], rs.format.z16, 15)
    profile = pipe.start(cfg)
    profile.get_device().query_sensors()[0].set_option(rs.option.exposure, 40000)
    return pipe, cfg, rs.align(rs.stream.color)


def read_like_rscapture(pipe: rs.pipeline, aligner: rs.align, depth: bool = False) -> np.ndarray:
    """The calls RSCapture.read makes: colour (h x w x 3), or colour with depth appended as a 4th channel."""
    frames = aligner.process(pipe.wait_for_frames())
    color = frames.get_color_frame()
    assert color.is_video_frame()
    image = np.asarray(color.get_data())
    if depth:
        depth_frame = frames.get_depth_frame()
        assert depth_frame.is_video_frame() and depth_frame.is_depth_frame()
        return np.concatenate((image, np.expand_dims(np.asarray(depth_frame.get_data()), axis=2)), axis=-1)
    return image


def pause_and_drain(stub: StubCameraServer, pipe: rs.pipeline) -> None:
    """Stops rendering and takes the frame (if any) rendered since the pipe's last delivery."""
    stub.paused = True
    time.sleep(0.05)
    pipe.try_wait_for_frames(timeout_ms=200)


def test_devices_enumerate_with_the_configured_serials(stub: StubCameraServer) -> None:
    devices = rs.context().devices
    assert [d.get_info(rs.camera_info.serial_number) for d in devices] == [c["serial"] for c in CAMERAS]
    assert "wrist_1" in devices[0].get_info(rs.camera_info.name)


def test_rscapture_call_sequence_reads_bgr_frames_of_the_configured_size(stub: StubCameraServer) -> None:
    pipe, cfg, aligner = open_like_rscapture(WRIST["serial"], (1280, 720))
    images = [read_like_rscapture(pipe, aligner) for _ in range(3)]
    frames = pipe.wait_for_frames()
    pipe.stop()
    cfg.disable_all_streams()

    for img in images:
        assert img.shape == (720, 1280, 3) and img.dtype == np.uint8
        seq_byte = int(img[0, 0, 0])
        expected = color_pixels(WRIST, seq_byte, generation=0)
        np.testing.assert_array_equal(img, expected)  # B, G, R in that order; the marker at row 1, column 2
        assert img[MARK[0], MARK[1], 2] == 7 and img[MARK[1], MARK[0], 2] == RED
    assert img[150:450, 350:1100].shape == (300, 750, 3)  # the stock env's crop of a 1280x720 frame
    color = frames.get_color_frame()
    assert color.get_frame_number() % 256 == int(np.asarray(color.get_data())[0, 0, 0])
    assert abs(color.get_timestamp() / 1000.0 - time.time()) < 5.0  # [ms] wall-clock capture time
    assert (color.get_width(), color.get_height()) == (1280, 720)
    assert not frames.get_depth_frame()  # no depth stream enabled: an empty (falsy) frame, as in pyrealsense2


def test_rgb8_stream_gives_rgb_order(stub: StubCameraServer) -> None:
    cfg = rs.config()
    cfg.enable_device(SIDE["serial"])
    cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.rgb8, 15)
    pipe = rs.pipeline()
    profile = pipe.start(cfg)
    img = np.asarray(pipe.wait_for_frames().get_color_frame().get_data())
    pipe.stop()
    assert profile.get_stream(rs.stream.color).format() == rs.format.rgb8
    assert img.shape == (720, 1280, 3) and img[0, 0, 0] == RED and img[MARK[0], MARK[1], 0] == 7


def test_depth_stream_comes_with_each_color_frame(stub: StubCameraServer) -> None:
    pipe, cfg, aligner = open_like_rscapture(DEPTH["serial"], (64, 48), depth=True)
    rgbd = read_like_rscapture(pipe, aligner, depth=True)
    frames = pipe.wait_for_frames()
    pipe.stop()

    assert rgbd.shape == (48, 64, 4)
    depth = np.asarray(frames.get_depth_frame().get_data())
    assert depth.shape == (48, 64) and depth.dtype == np.uint16
    color_seq = frames.get_color_frame().get_frame_number()
    assert frames.get_depth_frame().get_frame_number() >= color_seq
    assert depth[0, 0] == 1000 + frames.get_depth_frame().get_frame_number()
    assert frames.get_depth_frame().get_distance(3, 4) == pytest.approx(depth[4, 3] / 1000.0)


def test_wait_for_frames_returns_only_new_frames(stub: StubCameraServer) -> None:
    pipe, _, _ = open_like_rscapture(WRIST["serial"], (1280, 720))
    first = pipe.wait_for_frames().get_frame_number()
    second = pipe.wait_for_frames().get_frame_number()
    assert second > first

    pause_and_drain(stub, pipe)
    with pytest.raises(RuntimeError, match="Frame didn't arrive within 400"):
        pipe.wait_for_frames(timeout_ms=400)  # the last frame is never delivered twice
    stub.paused = False
    assert pipe.wait_for_frames().get_frame_number() > second
    pipe.stop()


def test_wait_for_frames_blocks_on_the_server_instead_of_polling(stub: StubCameraServer) -> None:
    pipe, _, _ = open_like_rscapture(WRIST["serial"], (1280, 720))
    pipe.wait_for_frames()

    since = time.monotonic()
    numbers = [pipe.wait_for_frames().get_frame_number() for _ in range(10)]
    assert numbers == sorted(set(numbers))
    assert stub.frame_requests(since) <= 2 * len(numbers) + 2  # one long poll per frame (+ a probe after a drop)

    pause_and_drain(stub, pipe)
    since = time.monotonic()
    with pytest.raises(RuntimeError, match="Frame didn't arrive within 1500"):
        pipe.wait_for_frames(timeout_ms=1500)
    assert 1.4 < time.monotonic() - since < 3.0
    assert stub.frame_requests(since) <= 6  # blocked on long polls: a few requests in 1.5 s, not hundreds
    pipe.stop()


def test_unknown_serial_raises_at_start(stub: StubCameraServer) -> None:
    cfg = rs.config()
    cfg.enable_device("000000000000")
    cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
    with pytest.raises(RuntimeError, match="Couldn't resolve requests"):
        rs.pipeline().start(cfg)


def test_unsupported_resolution_or_stream_raises_at_start(stub: StubCameraServer) -> None:
    cfg = rs.config()
    cfg.enable_device(WRIST["serial"])
    cfg.enable_stream(rs.stream.color, 640, 480, rs.format.bgr8, 15)
    with pytest.raises(RuntimeError, match="Couldn't resolve requests"):
        rs.pipeline().start(cfg)
    cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
    cfg.enable_stream(rs.stream.depth, 1280, 720, rs.format.z16, 15)  # wrist_1 has no depth
    with pytest.raises(RuntimeError, match="Couldn't resolve requests"):
        rs.pipeline().start(cfg)


def test_no_server_means_no_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("FRANKA_SIM_URL", f"http://127.0.0.1:{port}")
    assert rs.context().devices == []
    with pytest.raises(RuntimeError, match="No device connected"):
        rs.pipeline().start(rs.config())


def test_stream_reconnects_after_the_server_restarts(stub: StubCameraServer) -> None:
    pipe, _, aligner = open_like_rscapture(WRIST["serial"], (1280, 720))
    while pipe.wait_for_frames().get_frame_number() < 15:
        pass  # run the old server's seq past where the restarted one will be

    stub.stop()
    restarted: list[StubCameraServer] = []

    def restart() -> None:
        time.sleep(0.5)
        restarted.append(StubCameraServer(port=stub.port, generation=1, keep_alive=stub.keep_alive))

    thread = threading.Thread(target=restart)
    thread.start()
    try:
        img = read_like_rscapture(pipe, aligner)  # down for 0.5 s, then back with seqs from 0: no error
        assert img[0, 0, 1] == 60  # G encodes the server run: this frame is from the restarted server
        first = pipe.wait_for_frames().get_frame_number()
        assert pipe.wait_for_frames().get_frame_number() > first
    finally:
        thread.join()
        pipe.stop()
        for server in restarted:
            server.stop()


def test_stop_wakes_a_blocked_wait(stub: StubCameraServer) -> None:
    pipe, _, _ = open_like_rscapture(WRIST["serial"], (1280, 720))
    pause_and_drain(stub, pipe)
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            pipe.wait_for_frames(timeout_ms=10000)
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    pipe.stop()
    thread.join(timeout=5)
    assert not thread.is_alive() and len(errors) == 1
    assert time.monotonic() - started < 2.0


# --- one world, several servers (object_handover: a server per arm, each listing the other under "servers") ---

LEFT_WRIST = {"name": "wrist", "serial": "128422272758", "width": 64, "height": 48, "fps": 15, "depth": False}
LEFT_SIDE = {"name": "side", "serial": "130322274175", "width": 64, "height": 48, "fps": 15, "depth": False}
RIGHT_WRIST = {"name": "wrist", "serial": "127122270146", "width": 64, "height": 48, "fps": 15, "depth": False}


def serials(devices: list[rs.device]) -> list[str]:
    return [d.get_info(rs.camera_info.serial_number) for d in devices]


def unused_url() -> str:
    """An address where no server listens (connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[StubCameraServer, StubCameraServer]]:
    """The left arm's server (wrist, side; $FRANKA_SIM_URL) and the right arm's (wrist), each listing the other
    (a loop), the left one also a server that is down. G of each frame tells the servers apart (60 left, 70 right)."""
    left = StubCameraServer(generation=1, cameras=[LEFT_WRIST, LEFT_SIDE])
    right = StubCameraServer(generation=2, cameras=[RIGHT_WRIST], servers=[left.url + "/"])
    left.servers = [right.url + "/", unused_url() + "/"]
    monkeypatch.setenv("FRANKA_SIM_URL", left.url)
    yield left, right
    left.stop()
    right.stop()


def test_devices_span_the_servers_of_the_world(world, caplog: pytest.LogCaptureFixture) -> None:
    left, right = world
    caplog.set_level(logging.WARNING, logger="virtual_realsense")
    devices = rs.context().devices
    assert serials(devices) == [LEFT_WRIST["serial"], LEFT_SIDE["serial"], RIGHT_WRIST["serial"]]
    ports = [d.get_info(rs.camera_info.physical_port) for d in devices]
    assert ports == [f"{left.url}/frame/wrist", f"{left.url}/frame/side", f"{right.url}/frame/wrist"]
    assert (left.listing_requests(), right.listing_requests()) == (1, 1)  # the loop right -> left is not followed
    down = left.servers[1].rstrip("/")
    assert [r.getMessage() for r in caplog.records if down in r.getMessage()], "no warning for the server that is down"

    # Seen from the right arm's server: its own camera first, then the left's.
    assert serials(rs.context(right.url).devices) == [RIGHT_WRIST["serial"], LEFT_WRIST["serial"], LEFT_SIDE["serial"]]


def test_frames_of_a_camera_of_another_server_come_from_that_server(world) -> None:
    left, right = world
    right_pipe, _, aligner = open_like_rscapture(RIGHT_WRIST["serial"], (64, 48))  # $FRANKA_SIM_URL is the left's
    left_pipe, _, _ = open_like_rscapture(LEFT_WRIST["serial"], (64, 48))  # a camera of the same name, "wrist"
    try:
        right_images = [read_like_rscapture(right_pipe, aligner) for _ in range(3)]
        left_image = read_like_rscapture(left_pipe, aligner)
    finally:
        right_pipe.stop()
        left_pipe.stop()
    assert all(img.shape == (48, 64, 3) and img[0, 0, 1] == 70 for img in right_images)  # rendered by the right
    assert left_image[0, 0, 1] == 60
    frame_paths = [path for _, path in left.requests if path.startswith("/frame/")]
    assert frame_paths and all(path.startswith("/frame/wrist?") for path in frame_paths)
    assert right.frame_requests() >= 3


def test_duplicate_serials_and_repeated_servers_keep_the_first(world, caplog: pytest.LogCaptureFixture) -> None:
    left, right = world
    other = {"name": "top", "serial": "999999999999", "width": 64, "height": 48, "fps": 15, "depth": False}
    copies = [{**RIGHT_WRIST, "name": "wrist_copy"}, dict(LEFT_SIDE), other]  # a conflicting and an identical copy
    third = StubCameraServer(generation=3, cameras=copies, servers=[left.url, right.url + "/"])
    try:
        left.servers = [left.url, right.url, f"http://127.0.0.1:{right.port}/"]  # itself, and the right spelled twice
        right.servers = [left.url + "/", third.url + "/"]  # reached only through the right: followed transitively
        caplog.set_level(logging.WARNING, logger="virtual_realsense")
        devices = rs.context().devices
        assert serials(devices) == [LEFT_WRIST["serial"], LEFT_SIDE["serial"], RIGHT_WRIST["serial"], other["serial"]]
        assert [d.server.url for d in devices] == [left.url, left.url, right.url, third.url]
        assert (left.listing_requests(), right.listing_requests(), third.listing_requests()) == (1, 1, 1)
        warned = [r.getMessage() for r in caplog.records]
        assert any(RIGHT_WRIST["serial"] in m and "wrist_copy" in m for m in warned)  # a different camera: warned
        assert not any(LEFT_SIDE["serial"] in m for m in warned)  # the same camera listed twice: no news

        pipe, _, aligner = open_like_rscapture(other["serial"], (64, 48))
        try:
            assert read_like_rscapture(pipe, aligner)[0, 0, 1] == 80  # the third server's frame
        finally:
            pipe.stop()
    finally:
        third.stop()


def test_unreachable_or_malformed_servers_are_skipped(world, caplog: pytest.LogCaptureFixture) -> None:
    left, right = world
    left.servers = [unused_url(), "ftp://127.0.0.1/", 42, right.url]
    caplog.set_level(logging.WARNING, logger="virtual_realsense")
    assert serials(rs.context().devices) == [LEFT_WRIST["serial"], LEFT_SIDE["serial"], RIGHT_WRIST["serial"]]
    warned = " | ".join(r.getMessage() for r in caplog.records)
    assert left.servers[0] in warned and "ftp://127.0.0.1/" in warned and "42" in warned

    right.stop()  # the right arm's server goes away: the left's cameras still open
    assert serials(rs.context().devices) == [LEFT_WRIST["serial"], LEFT_SIDE["serial"]]
    pipe, _, aligner = open_like_rscapture(LEFT_SIDE["serial"], (64, 48))
    try:
        assert read_like_rscapture(pipe, aligner)[0, 0, 1] == 60
    finally:
        pipe.stop()
    with pytest.raises(RuntimeError, match="Couldn't resolve requests"):
        rs.pipeline().start(_color_config(RIGHT_WRIST["serial"], 64, 48))


def test_a_server_without_the_servers_key_lists_only_its_own_cameras(stub: StubCameraServer) -> None:
    assert stub.servers is None
    assert serials(rs.context().devices) == [c["serial"] for c in CAMERAS]
    assert stub.listing_requests() == 1


def test_two_pipelines_on_one_serial_both_get_every_frame(stub: StubCameraServer) -> None:
    # usb_pickup_insertion's side_policy and side_classifier: two camera keys, one serial.
    pipes = [open_like_rscapture(SIDE["serial"], (1280, 720))[0] for _ in range(2)]
    try:
        for pipe in pipes:
            pipe.wait_for_frames()
        stub.paused = True
        time.sleep(0.05)
        for pipe in pipes:
            pipe.try_wait_for_frames(timeout_ms=200)  # each now holds the newest frame

        for _ in range(3):
            got: dict[int, rs.composite_frame] = {}
            readers = [threading.Thread(target=_read_into, args=(got, i, pipe)) for i, pipe in enumerate(pipes)]
            for reader in readers:
                reader.start()
            time.sleep(0.1)  # both blocked on the server at once
            seq = stub.step()
            for reader in readers:
                reader.join(timeout=5)
            assert sorted(got) == [0, 1]
            for frames in got.values():
                color = frames.get_color_frame()
                assert color.get_frame_number() == seq and int(np.asarray(color.get_data())[0, 0, 0]) == seq % 256

        pipes.pop(0).stop()  # one closes; the other keeps streaming
        seq = stub.step()
        assert pipes[0].wait_for_frames().get_color_frame().get_frame_number() == seq
    finally:
        for pipe in pipes:
            pipe.stop()


def _read_into(got: dict[int, rs.composite_frame], key: int, pipe: rs.pipeline) -> None:
    got[key] = pipe.wait_for_frames()


def _color_config(serial: str, width: int, height: int) -> rs.config:
    cfg = rs.config()
    cfg.enable_device(serial)
    cfg.enable_stream(rs.stream.color, width, height, rs.format.bgr8, 15)
    return cfg


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter with the client on PYTHONPATH and FRANKA_SIM_* only as given."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FRANKA_SIM_")}
    clean["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_DIR), clean.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, timeout=60, check=False
    )


# site.addsitedir processes the directory's .pth files exactly as interpreter start-up does for site-packages.
REDIRECT_PROBE = f"""
import site
site.addsitedir({str(PACKAGE_DIR)!r})
try:
    import pyrealsense2 as rs
except ImportError:
    print("ImportError")
else:
    import virtual_realsense
    from pyrealsense2 import pyrealsense2 as inner
    print(rs is virtual_realsense and inner is virtual_realsense, rs.__spec__.name)
"""


def test_pth_hook_redirects_pyrealsense2_only_when_asked() -> None:
    assert (PACKAGE_DIR / "virtual_realsense.pth").read_text().startswith("import ")  # site executes import lines

    on = run_python(REDIRECT_PROBE, FRANKA_SIM_CAMERAS="1")
    assert on.returncode == 0, on.stderr
    assert on.stdout.split() == ["True", "virtual_realsense"]

    real = importlib.util.find_spec("pyrealsense2") is not None
    for env in ({}, {"FRANKA_SIM_CAMERAS": "0"}):
        off = run_python(REDIRECT_PROBE, **env)
        assert off.returncode == 0, off.stderr
        assert off.stdout.split()[0] == ("False" if real else "ImportError")


def test_wheel_installs_the_pth_file_into_site_packages(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    source = tmp_path / "src"
    ignore = ("build", "dist", "*.egg-info", "__pycache__")
    shutil.copytree(PACKAGE_DIR, source, ignore=shutil.ignore_patterns(*ignore))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("virtual_realsense-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    # Root of a purelib wheel = site-packages: where site reads .pth files at start-up.
    assert {"virtual_realsense.pth", "virtual_realsense_hook.py", "virtual_realsense/__init__.py"} <= set(names)
