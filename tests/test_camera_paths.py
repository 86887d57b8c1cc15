"""The two ways a frame reaches the stock client, end to end with the real launch (sim bridge, camera process,
franka_server_ros2) and the pyrealsense2 stand-in: shared memory on the simulator's host, HTTP otherwise, chosen by
the stand-in itself; the same frame either way. And no work nobody asked for: a camera nobody reads is not rendered,
the server subscribes to a camera only while HTTP clients ask for it."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image

from franka_server_ros2.cameras import IDLE_UNSUBSCRIBE_S, SHM_DIR, host_identity

from conftest import second_robot, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clients" / "virtual_realsense"))
import virtual_realsense as rs  # noqa: E402
from virtual_realsense import _shm  # noqa: E402

WRIST_1, WRIST_2 = "127122270146", "127122270350"

pytestmark = pytest.mark.skipif(not os.path.isdir(SHM_DIR), reason="no /dev/shm on this host")


@pytest.fixture(scope="module")
def camera_sim():
    with second_robot("cameras_config:=") as (robot, node, process):
        for name in ("wrist_1", "wrist_2"):  # the cameras render
            assert wait_until(
                lambda n=name: robot.session.get(robot.url + f"frame/{n}?timeout=2", timeout=10).status_code == 200,
                90.0,
            ), process.output()[-3000:]
        yield robot, node, process


@pytest.fixture()
def url(camera_sim, monkeypatch):
    robot = camera_sim[0]
    monkeypatch.setenv("FRANKA_SIM_URL", robot.url.rstrip("/"))
    monkeypatch.delenv(_shm.ENV_VAR, raising=False)
    return robot.url


def start(serial: str) -> rs.pipeline:
    """RSCapture's calls up to pipeline.start."""
    pipe, cfg = rs.pipeline(), rs.config()
    cfg.enable_device(serial)
    cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
    pipe.start(cfg)
    return pipe


def frames_for(pipe: rs.pipeline, seconds: float) -> dict[float, np.ndarray]:
    """{simulated capture time: pixels} of every frame the pipeline delivers for `seconds`."""
    got, deadline = {}, time.monotonic() + seconds
    while time.monotonic() < deadline:
        frame = pipe.wait_for_frames().get_color_frame()
        got[frame.get_sim_time()] = np.asarray(frame.get_data()).copy()
    return got


def test_get_cameras_names_each_cameras_ring_and_this_host(camera_sim):
    robot = camera_sim[0]
    listing = robot.session.get(robot.url + "cameras", timeout=10).json()
    assert listing["host"] == host_identity() != ""
    for camera in listing["cameras"]:
        ring = camera["shm"]
        assert ring["name"].endswith(f".{camera['name']}.image_raw") and int(ring["id"], 16) >= 0
        assert os.path.exists(os.path.join(SHM_DIR, ring["name"]))


def test_on_the_simulators_host_the_frame_comes_from_shared_memory_and_is_the_one_http_serves(url, monkeypatch):
    by_ring = start(WRIST_1)
    monkeypatch.setenv(_shm.ENV_VAR, "0")  # this one over HTTP, as a client on another host
    by_http = start(WRIST_1)
    try:
        assert (by_ring._source.path, by_http._source.path) == ("shm", "http")
        results: dict[str, dict] = {}
        threads = [
            threading.Thread(target=lambda k=k, p=p: results.__setitem__(k, frames_for(p, 3.0)))
            for k, p in (("shm", by_ring), ("http", by_http))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30.0)
        both = sorted(set(results["shm"]) & set(results["http"]))
        assert len(both) >= 2, (sorted(results["shm"]), sorted(results["http"]))
        for stamp in both:  # the same capture, byte for byte
            assert results["shm"][stamp].shape == (720, 1280, 3)
            assert np.array_equal(results["shm"][stamp], results["http"][stamp]), f"frame at {stamp} s differs"
        assert by_ring._source.path == "shm"
    finally:
        by_ring.stop()
        by_http.stop()


def test_without_shared_memory_the_stand_in_takes_frames_over_http(url, monkeypatch):
    monkeypatch.setattr(_shm, "host_identity", lambda: "another-boot/another-host")  # the server is elsewhere
    pipe = start(WRIST_2)
    try:
        assert pipe._source.path == "http"
        first = pipe.wait_for_frames().get_color_frame()
        second = pipe.wait_for_frames().get_color_frame()
        assert second.get_sim_time() > first.get_sim_time()
        assert np.asarray(second.get_data()).shape == (720, 1280, 3)
    finally:
        pipe.stop()


def test_a_ring_that_goes_away_hands_over_to_http_and_is_taken_up_again_when_it_is_back(url, camera_sim):
    robot = camera_sim[0]
    ring = next(c["shm"]["name"] for c in robot.session.get(robot.url + "cameras").json()["cameras"])
    path = os.path.join(SHM_DIR, ring)
    pipe = start(WRIST_1)
    try:
        assert pipe._source.path == "shm"
        before = pipe.wait_for_frames().get_color_frame().get_sim_time()
        os.rename(path, path + ".away")  # as if the simulation had restarted without shared memory
        try:
            stamps = [before] + [pipe.wait_for_frames(10000).get_color_frame().get_sim_time() for _ in range(10)]
            assert pipe._source.path == "http"
        finally:
            os.rename(path + ".away", path)

        def next_frame_from_the_ring() -> bool:
            stamps.append(pipe.wait_for_frames(10000).get_color_frame().get_sim_time())
            return pipe._source.path == "shm"

        assert wait_until(next_frame_from_the_ring, 20.0)
        stamps += [pipe.wait_for_frames(10000).get_color_frame().get_sim_time() for _ in range(3)]
        # new frames all along, none twice: across both hand-overs each capture comes once (the stamps are the
        # same number over HTTP and the ring: a capture taken from one and then from the other was seen twice)
        assert np.all(np.diff(stamps) > 0), stamps
    finally:
        pipe.stop()


def camera_diagnostics(node, camera: str, seconds: float) -> list[dict[str, str]]:
    """The camera process's /diagnostics values for `camera` over the next `seconds`."""
    seen: list[dict[str, str]] = []

    def on_message(msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name == f"franka_sim_cameras: {camera}":
                seen.append({"message": status.message, **{kv.key: kv.value for kv in status.values}})

    subscription = node.create_subscription(DiagnosticArray, "/diagnostics", on_message, 10)
    try:
        time.sleep(seconds)
    finally:
        node.destroy_subscription(subscription)
    return seen


def test_a_camera_nobody_reads_is_not_rendered_and_a_reader_gets_it_at_its_rate(camera_sim):
    robot, node, _ = camera_sim
    topic = "/wrist_2/image_raw"
    # the server subscribes while HTTP clients ask for a camera, and lets go some seconds after the last request
    assert robot.session.get(robot.url + "frame/wrist_2?timeout=5", timeout=10).status_code == 200
    assert wait_until(lambda: node.count_subscribers(topic) == 1, 5.0)
    assert wait_until(lambda: node.count_subscribers(topic) == 0, IDLE_UNSUBSCRIBE_S + 10.0)
    # nobody reads wrist_2 now: its frames are skipped, nothing is rendered
    time.sleep(1.5)  # a whole diagnostics window without a reader
    idle = camera_diagnostics(node, "wrist_2", 2.5)
    assert idle and float(idle[-1]["frame_rate"]) == 0.0, idle
    assert idle[-1]["message"].startswith("idle") and float(idle[-1]["skipped_frame_rate"]) > 5.0, idle
    # a subscriber on ROS 2: frames from the next due one, at the camera's rate
    arrivals: list[float] = []
    subscription = node.create_subscription(
        Image, topic, lambda _: arrivals.append(time.monotonic()), qos_profile_sensor_data, raw=True
    )
    try:
        assert wait_until(lambda: len(arrivals) >= 2, 10.0)
        time.sleep(3.0)
        rate = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])
        assert 5.0 < rate <= 15.0 * 1.05, rate  # never faster than its 15 fps; slower only when the CPU is short
        busy = camera_diagnostics(node, "wrist_2", 2.5)
        assert busy and float(busy[-1]["frame_rate"]) > 0.0 and busy[-1]["ros_subscriber"] == "true", busy
    finally:
        node.destroy_subscription(subscription)
