"""The shared-memory frame ring between the camera process (writer, isaac_franka_bridge/sim/cameras.py) and the
pyrealsense2 stand-in on the same host (reader, clients/virtual_realsense/virtual_realsense/_shm.py), and the
render loop's rule: each camera at its rate, never faster, and only when somebody reads it. No ROS here."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from franka_server_ros2 import cameras as layout
from franka_server_ros2.camera_specs import CameraSpec
from isaac_franka_bridge.sim.cameras import FrameRing, remove_stale_rings, render_loop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "virtual_realsense"))
from virtual_realsense import _shm  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.isdir(layout.SHM_DIR), reason="no /dev/shm on this host")

WIDTH, HEIGHT = 320, 240  # a quarter of a 1280x720 frame's rows and columns: fast enough to lap a slow reader


def unique_name() -> str:
    return f"{layout.RING_PREFIX}{os.getuid()}.test.{uuid.uuid4().hex}"


def frame_pattern(seq: int) -> np.ndarray:
    """Every byte of frame `seq` says which frame it is: a mix of two frames is seen at once."""
    pixels = np.empty((HEIGHT, WIDTH, 3), np.uint8)
    pixels[...] = seq % 251
    pixels[0, 0] = pixels[-1, -1] = (seq % 256, (seq >> 8) % 256, (seq >> 16) % 256)
    return pixels


def assert_whole(data: bytes | bytearray, seq: int) -> None:
    pixels = np.frombuffer(data, np.uint8).reshape(HEIGHT, WIDTH, 3)
    expected = frame_pattern(seq)
    assert np.array_equal(pixels, expected), f"frame {seq} is torn: it holds bytes of another frame"


def write_frames(name: str, count: int, interval: float, ready) -> None:
    """The writer, in a process of its own: `count` frames, one every `interval` s (0: as fast as it can)."""
    ring = FrameRing(name, WIDTH, HEIGHT, 1.0 / 15.0)
    ready.set()
    try:
        for seq in range(1, count + 1):
            ring.begin()[...] = frame_pattern(seq)
            ring.commit(stamp=seq * 1e-3, wall_time=time.time())
            if interval:
                time.sleep(interval)
        time.sleep(3.0)  # the reader takes the last frame
    finally:
        ring.close()


class SlowReader(_shm.RingReader):
    """A reader whose copy takes long: it lets the writer overwrite the slot it is copying."""

    copies = 0

    def _copy(self, pixels: memoryview) -> bytearray:
        self.copies += 1
        out = bytearray(len(pixels))
        step = len(pixels) // 4
        for start in range(0, len(pixels), step):
            out[start : start + step] = pixels[start : start + step]
            time.sleep(0.0007)
        return out


def info_of(ring: FrameRing, name: str) -> _shm.RingInfo:
    return _shm.RingInfo(name, ring.segment_id, _shm.host_identity())


def test_a_slow_reader_under_a_fast_writer_never_sees_a_torn_frame_and_always_gets_the_newest():
    name = unique_name()
    spawn = multiprocessing.get_context("spawn")
    ready = spawn.Event()
    count = 4000
    writer = spawn.Process(target=write_frames, args=(name, count, 0.0005, ready), daemon=True)
    writer.start()
    try:
        assert ready.wait(30.0)
        advertised = layout.ring_info(name)
        assert advertised is not None  # what the server names in GET /cameras
        reader = SlowReader(_shm.RingInfo(name, int(advertised["id"], 16), _shm.host_identity()))
        delivered, reads = [], 0
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline:
            newest_before = reader.latest()
            frame = reader.read()
            reads += 1
            if frame is None:  # the writer overwrote every frame this reader began to copy: retried, never torn
                continue
            assert_whole(frame.data, frame.seq)
            assert frame.seq >= newest_before, "an older frame than the newest one when the read began"
            assert frame.stamp == pytest.approx(frame.seq * 1e-3)
            assert not delivered or frame.seq >= delivered[-1]
            delivered.append(frame.seq)
            if frame.seq == count:
                break
            time.sleep(0.01)  # a slow reader: the writer laps the ring between two reads
        assert delivered and delivered[-1] == count, "the writer's last frame was not delivered"
        assert len(set(delivered)) < count / 4  # it really was slower than the writer (frames were skipped)
        torn = reader.copies - len(delivered)
        assert torn > 10, f"only {torn} copies were overwritten while they were made: the test proves nothing"
        reader.close()
    finally:
        writer.join(30.0)
        if writer.is_alive():
            writer.kill()
    assert not os.path.exists(os.path.join(layout.SHM_DIR, name)), "the writer left its ring behind"


def test_the_reader_knows_the_layout_the_camera_process_writes_and_its_heartbeat_reaches_the_writer():
    assert _shm.HEAD.format == layout.RING_HEAD.format
    assert (_shm.MAGIC, _shm.VERSION, _shm.HEADER_SIZE, _shm.SLOT_HEADER, _shm.SHM_DIR) == (
        layout.RING_MAGIC,
        layout.RING_VERSION,
        layout.RING_HEADER_SIZE,
        layout.RING_SLOT_HEADER,
        layout.SHM_DIR,
    )
    assert _shm.host_identity() == layout.host_identity() != ""
    name = unique_name()
    ring = FrameRing(name, WIDTH, HEIGHT, 1.0 / 15.0)
    try:
        reader = _shm.RingReader(info_of(ring, name))
        assert reader.read() is None and reader.latest() == 0  # nothing written yet
        assert (reader.width, reader.height, reader.period) == (WIDTH, HEIGHT, pytest.approx(1.0 / 15.0))
        ring.begin()[...] = frame_pattern(1)
        ring.commit(stamp=12.5, wall_time=1234.5)
        frame = reader.read()
        assert (frame.seq, frame.stamp, frame.wall_time, frame.encoding) == (1, 12.5, 1234.5, "bgr8")
        assert_whole(frame.data, 1)
        assert not ring.has_reader()
        reader.beat()
        assert ring.has_reader() and ring.reader_age() < 0.5
        assert reader.writer_age() < 5.0
        reader.close()
    finally:
        ring.close()


def test_a_ring_that_is_not_the_one_named_does_not_open_and_a_replaced_one_is_noticed():
    name = unique_name()
    ring = FrameRing(name, WIDTH, HEIGHT, 1.0 / 15.0)
    try:
        with pytest.raises(_shm.RingUnavailable):
            _shm.RingReader(_shm.RingInfo(name, ring.segment_id ^ 1, _shm.host_identity()))  # another id
        with pytest.raises(_shm.RingUnavailable):
            _shm.RingReader(_shm.RingInfo(name + ".missing", ring.segment_id, _shm.host_identity()))
        assert _shm.open_ring(_shm.RingInfo(name, ring.segment_id, "another-boot/another-host")) is None
        reader = _shm.open_ring(info_of(ring, name))
        assert reader is not None and not reader.replaced()
        newer = FrameRing(name, WIDTH, HEIGHT, 1.0 / 15.0)  # a restarted simulation's camera, same name
        try:
            assert reader.replaced()
            assert newer.segment_id != ring.segment_id
            assert layout.ring_info(name)["id"] == f"{newer.segment_id:016x}"
        finally:
            newer.close()
            ring.close()  # not its segment any more: left alone ...
        reader.close()
    finally:
        ring.close()
    assert not os.path.exists(os.path.join(layout.SHM_DIR, name))  # ... and the newer one removed its own


def test_a_ring_whose_writer_died_is_neither_advertised_nor_kept(monkeypatch):
    name = unique_name()
    ring = FrameRing(name, WIDTH, HEIGHT, 1.0 / 15.0)
    path = os.path.join(layout.SHM_DIR, name)
    try:
        assert layout.ring_info(name) is not None
        with open(path, "r+b") as f:  # as a writer killed long ago leaves it: no heartbeat, its pid gone
            f.seek(72)
            f.write(np.float64(time.monotonic() - 60.0).tobytes() + np.uint32(2**31 - 7).tobytes())
        assert layout.ring_info(name) is None
        assert name in remove_stale_rings(f"{layout.RING_PREFIX}{os.getuid()}.test.")
        assert not os.path.exists(path)
    finally:
        ring.close()


# --- the render loop: each camera at its rate on the simulated clock, never faster, only when somebody reads it


class FakeRenderer:
    def __init__(self) -> None:
        self.rendered: list[tuple[str, float]] = []
        self.clock = 0.0

    def render(self, state, name: str) -> np.ndarray:
        self.rendered.append((name, self.clock))
        return np.zeros((2, 2, 3), np.uint8)


def camera(name: str, fps: float) -> CameraSpec:
    return CameraSpec(name, "0", 2, 2, fps, "world", (0, 0, 0), (1, 0, 0, 0), 45.0)


def run_loop(cameras: list[CameraSpec], wanted, seconds: float, dt: float = 0.001):
    """The loop against a simulated clock that advances `dt` per look at the state."""
    renderer, skipped = FakeRenderer(), []

    def state():
        renderer.clock += dt
        return renderer.clock, None

    render_loop(
        renderer,
        cameras,
        state,
        lambda frame: None,
        lambda: renderer.clock < seconds,
        wanted=wanted,
        on_skip=lambda c, stamp: skipped.append((c.name, stamp)),
    )
    return renderer.rendered, skipped


def test_each_camera_renders_at_its_rate_and_no_faster_and_not_at_all_without_a_reader(monkeypatch):
    monkeypatch.setattr(time, "sleep", lambda s: None)  # the fake clock does not wait
    cams = [camera("wrist_1", 15.0), camera("side", 30.0)]
    reading = {"wrist_1": True, "side": False}
    rendered, skipped = run_loop(cams, lambda c: reading[c.name], seconds=2.0)
    wrist = [t for name, t in rendered if name == "wrist_1"]
    assert len(wrist) == pytest.approx(30, abs=1)  # 15 fps for 2 s
    assert min(np.diff(wrist)) >= 1.0 / 15.0 - 0.002  # never faster than its rate
    assert not [name for name, _ in rendered if name == "side"]  # nobody reads it: never rendered ...
    assert len([s for s in skipped if s[0] == "side"]) == pytest.approx(60, abs=1)  # ... its frames skipped

    reading["side"] = True  # a reader appears: the next due frame is rendered
    rendered, _ = run_loop(cams, lambda c: reading[c.name], seconds=1.0)
    side = [t for name, t in rendered if name == "side"]
    assert side and side[0] <= 1.0 / 30.0 + 0.002 and len(side) == pytest.approx(30, abs=1)
