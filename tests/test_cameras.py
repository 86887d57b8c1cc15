"""Simulated cameras on ROS 2 (groundwork of the camera issue): frames of the configured size and
encoding, with intrinsics from the configured field of view. Real sim bridge + MuJoCo EGL rendering."""

import math
from pathlib import Path

import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from franka_server_ros2.camera_specs import load_cameras

from conftest import Process, free_port, second_robot, wait_until


@pytest.fixture(scope="module")
def camera_sim():
    with second_robot("cameras_config:=") as (robot, node, process):
        # the cameras are up (the first frames render after the model loads), as a plugged-in RealSense is
        for name in ("wrist_1", "wrist_2"):
            assert wait_until(
                lambda n=name: robot.session.get(robot.url + f"frame/{n}?timeout=2", timeout=10).status_code == 200,
                90.0,
            ), process.output()[-3000:]
        yield node, process, robot


def test_default_camera_config_names_the_wrist_cameras_with_serials():
    from ament_index_python.packages import get_package_share_directory

    cameras = load_cameras(f"{get_package_share_directory('isaac_franka_bridge')}/config/cameras.yaml")
    assert [(c.name, c.width, c.height, c.fps) for c in cameras] == [
        ("wrist_1", 1280, 720, 15.0),
        ("wrist_2", 1280, 720, 15.0),
    ]
    assert all(c.serial_number.isdigit() for c in cameras)


@pytest.mark.parametrize("camera", ["wrist_1", "wrist_2"])
def test_each_camera_publishes_rgb_frames_and_its_intrinsics(camera_sim, camera):
    node, process, _ = camera_sim
    got: dict[str, object] = {}
    image_sub = node.create_subscription(
        Image, f"/{camera}/image_raw", lambda m: got.setdefault("image", m), qos_profile_sensor_data
    )
    info_sub = node.create_subscription(
        CameraInfo, f"/{camera}/camera_info", lambda m: got.setdefault("info", m), qos_profile_sensor_data
    )
    try:
        assert wait_until(lambda: "image" in got and "info" in got, 90.0), process.output()[-3000:]
        image, info = got["image"], got["info"]
        assert (image.height, image.width, image.encoding, image.step) == (720, 1280, "bgr8", 1280 * 3)
        pixels = np.frombuffer(bytes(image.data), np.uint8).reshape(720, 1280, 3)
        assert pixels.std() > 5.0, "a blank frame"
        focal = 0.5 * 720 / math.tan(math.radians(42.5) / 2)
        assert info.k[0] == pytest.approx(focal) and info.header.frame_id == f"{camera}_optical_frame"
        assert image.header.stamp == info.header.stamp or info.header.stamp.sec >= 0
    finally:
        node.destroy_subscription(image_sub)
        node.destroy_subscription(info_sub)


# --- the stock client's camera path: pyrealsense2 API (virtual_realsense) over the real server ---

CLIENT = Path(__file__).resolve().parent.parent / "clients" / "virtual_realsense"


@pytest.fixture()
def rs(camera_sim, monkeypatch):
    _, _, robot = camera_sim
    monkeypatch.syspath_prepend(str(CLIENT))
    monkeypatch.setenv("FRANKA_SIM_URL", robot.url.rstrip("/"))
    import virtual_realsense

    return virtual_realsense


def expected_pixel(camera: str, point: np.ndarray) -> tuple[float, float]:
    """Where `point` (base frame) should appear in `camera` at the reset configuration."""
    from ament_index_python.packages import get_package_share_directory

    from isaac_franka_bridge.backends.mujoco_backend import MujocoWorld
    from isaac_franka_bridge.world import one_robot_world

    specs = load_cameras(f"{get_package_share_directory('isaac_franka_bridge')}/config/cameras.yaml")
    backend = MujocoWorld(one_robot_world(cameras=specs)).robots[0]
    backend.set_arm_configuration(np.array([0.0, 0.0, 0.0, -1.9, 0.0, 2.0, 0.0]))
    m, d = backend.model, backend.data
    cam = m.camera(camera).id
    local = d.cam_xmat[cam].reshape(3, 3).T @ (point - d.cam_xpos[cam])  # MuJoCo camera: -z forward, y up
    spec = next(c for c in specs if c.name == camera)
    focal, cx, cy = spec.intrinsics()
    return cx + focal * local[0] / -local[2], cy - focal * local[1] / -local[2]


def read_like_rscapture(rs, serial: str) -> np.ndarray:
    """The calls of HIL-SERL's RSCapture.__init__ / read / close (contract.md section 4)."""
    assert serial in [d.get_info(rs.camera_info.serial_number) for d in rs.context().devices]
    pipe, cfg = rs.pipeline(), rs.config()
    cfg.enable_device(serial)
    cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
    profile = pipe.start(cfg)
    profile.get_device().query_sensors()[0].set_option(rs.option.exposure, 40000)
    align = rs.align(rs.stream.color)
    try:
        first = align.process(pipe.wait_for_frames()).get_color_frame()
        frames = align.process(pipe.wait_for_frames())
        color = frames.get_color_frame()
        assert color.is_video_frame() and color.get_frame_number() > first.get_frame_number()
        return np.asarray(color.get_data()).copy()
    finally:
        pipe.stop()
        cfg.disable_all_streams()


@pytest.mark.parametrize("path", ["shm", "http"])  # on the simulator's host; as from another host
@pytest.mark.parametrize("camera,serial", [("wrist_1", "127122270146"), ("wrist_2", "127122270350")])
def test_stock_rscapture_reads_bgr_frames_with_the_cube_where_and_in_the_colour_expected(
    rs, camera, serial, path, monkeypatch
):
    monkeypatch.setenv("FRANKA_SIM_SHM", "1" if path == "shm" else "0")
    image = read_like_rscapture(rs, serial)
    assert image.shape == (720, 1280, 3) and image.dtype == np.uint8
    blue, green, red = (image[:, :, i].astype(int) for i in range(3))
    cube = (red > 150) & (red > green + 60) & (red > blue + 60)  # the red cube, in BGR order
    assert cube.sum() > 500, "the red cube is not in view (or the channels are swapped)"
    v, u = np.argwhere(cube).mean(axis=0)
    expected_u, expected_v = expected_pixel(camera, np.array([0.55, 0.0, 0.02]))
    assert abs(u - expected_u) < 60 and abs(v - expected_v) < 60, ((u, v), (expected_u, expected_v))


def start_server(port: int, domain: int) -> Process:
    """A franka_server_ros2 of its own beside the camera robot's (on its ROS `domain`), on `port`."""
    from ament_index_python.packages import get_package_share_directory

    cameras = f"{get_package_share_directory('isaac_franka_bridge')}/config/cameras.yaml"
    arguments = [f"port:={port}", "host:=127.0.0.1", f"cameras_config:={cameras}", "use_sim_time:=true"]
    command = ["ros2", "run", "isaac_franka_bridge", "franka_server", "--ros-args"]
    return Process(
        command + [a for argument in arguments for a in ("-p", argument)], "server", env={"ROS_DOMAIN_ID": str(domain)}
    )


def test_frames_keep_arriving_after_the_client_reconnects_and_after_the_server_restarts(rs, camera_sim, monkeypatch):
    port, domain = free_port(), camera_sim[0].context.get_domain_id()
    monkeypatch.setenv("FRANKA_SIM_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv(
        "FRANKA_SIM_SHM", "0"
    )  # over HTTP, as a client on another host (shared memory: test_camera_paths)
    server = start_server(port, domain)
    try:
        listed = lambda: bool(rs.context().devices)  # noqa: E731
        assert wait_until(listed, 60.0), server.output()
        first = read_like_rscapture(rs, "127122270146")
        again = read_like_rscapture(rs, "127122270146")  # the client closed its pipeline and reconnects
        assert first.shape == again.shape == (720, 1280, 3)

        pipe, cfg = rs.pipeline(), rs.config()
        cfg.enable_device("127122270350")
        cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
        pipe.start(cfg)
        try:
            before = pipe.wait_for_frames().get_color_frame()
            server.stop()  # the server goes away under a running pipeline ...
            server = start_server(port, domain)  # ... and a new one takes its place
            after = pipe.wait_for_frames(60000).get_color_frame()  # a restart takes seconds, not an error
            assert after.get_timestamp() > before.get_timestamp()  # a new frame, not the last one again
            newer = pipe.wait_for_frames().get_color_frame()
            assert newer.get_timestamp() > after.get_timestamp()
            assert np.asarray(newer.get_data()).shape == (720, 1280, 3)
        finally:
            pipe.stop()
    finally:
        server.stop()


def test_an_unknown_serial_fails_to_start_like_the_real_library(rs):
    pipe, cfg = rs.pipeline(), rs.config()
    cfg.enable_device("000000000000")
    cfg.enable_stream(rs.stream.color, 1280, 720, rs.format.bgr8, 15)
    with pytest.raises(RuntimeError):
        pipe.start(cfg)


def test_websocket_stream_and_get_images_decode_to_the_same_image(camera_sim):
    import base64

    import cv2
    import simple_websocket

    _, _, robot = camera_sim
    crop = "350,150,1100,450"
    answer = robot.session.get(robot.url + f"get_images?cameras=wrist_1&crop={crop}&quality=95", timeout=10)
    assert answer.status_code == 200, answer.text
    via_http = cv2.imdecode(np.frombuffer(base64.b64decode(answer.json()["wrist_1"]), np.uint8), cv2.IMREAD_COLOR)
    ws = simple_websocket.Client.connect(
        robot.url.replace("http", "ws") + f"images?cameras=wrist_1&crop={crop}&quality=95"
    )
    try:
        message = ws.receive(timeout=10)
    finally:
        ws.close()
    key_length = message[0]
    assert message[1 : 1 + key_length] == b"wrist_1"
    via_ws = cv2.imdecode(np.frombuffer(message[1 + key_length :], np.uint8), cv2.IMREAD_COLOR)
    assert via_http.shape == via_ws.shape == (300, 750, 3)
    assert np.abs(via_http.astype(int) - via_ws.astype(int)).mean() < 3.0  # the arm is still: same picture


def test_each_frame_carries_its_capture_time(camera_sim):
    """In the JPEG's comment segment (WebSocket, /get_images), X-Frame-Stamps, X-Frame-Stamp of /frame."""
    import base64
    import json
    import time

    import simple_websocket

    from franka_server_ros2.cameras import read_capture_comment

    _, _, robot = camera_sim
    raw = robot.session.get(robot.url + "frame/wrist_1", timeout=10)
    answer = robot.session.get(robot.url + "get_images?cameras=wrist_1", timeout=10)
    comment = read_capture_comment(base64.b64decode(answer.json()["wrist_1"]))
    assert comment["stamp"] == json.loads(answer.headers["X-Frame-Stamps"])["wrist_1"]
    assert comment["stamp"] >= float(raw.headers["X-Frame-Stamp"])  # simulated clock, newest frame
    assert 0.0 <= time.time() - comment["received"] < 30.0  # arrival at the server, Unix time
    ws = simple_websocket.Client.connect(robot.url.replace("http", "ws") + "images?cameras=wrist_2")
    try:
        stamps = []
        for _ in range(3):
            message = ws.receive(timeout=10)
            stamps.append(read_capture_comment(message[1 + message[0] :])["stamp"])
    finally:
        ws.close()
    assert stamps == sorted(stamps) and len(set(stamps)) == 3  # newer frames, each with its own time


def test_the_server_reads_serialized_images_without_deserializing_the_pixels():
    from rclpy.serialization import serialize_message

    from franka_server_ros2.image_cdr import parse_image

    for frame_id in ("", "a", "wrist_1_optical_frame"):  # every string padding
        pixels = np.random.default_rng(1).integers(0, 255, (7, 5, 3), dtype=np.uint8)
        msg = Image(height=7, width=5, encoding="bgr8", step=15, data=pixels.tobytes())
        msg.header.frame_id, msg.header.stamp.sec, msg.header.stamp.nanosec = frame_id, 12, 250_000_000
        view = parse_image(serialize_message(msg))
        assert (view.stamp, view.height, view.width, view.encoding, view.step) == (12.25, 7, 5, "bgr8", 15)
        np.testing.assert_array_equal(np.frombuffer(view.data, np.uint8).reshape(7, 5, 3), pixels)


BAD_CAMERA_REQUESTS = [
    ("frame/wrist_1?after=abc", 400),
    ("frame/wrist_1?timeout=nan", 400),
    ("frame/wrist_1?timeout=-1", 400),
    ("frame/wrist_1?timeout=1e9", 400),
    ("frame/wrist_1?stream=depth", 400),
    ("frame/nope", 404),
    ("get_images?quality=0", 400),
    ("get_images?quality=101", 400),
    ("get_images?quality=high", 400),
    ("get_images?crop=1,2,3", 400),
    ("get_images?crop=a,b,c,d", 400),
    ("get_images?crop=10,10,5,20", 400),
    ("get_images?crop=0,0,1281,720", 400),  # outside the 1280x720 frame
    ("get_images?cameras=nope", 404),
]


@pytest.mark.parametrize("route,status", BAD_CAMERA_REQUESTS)
def test_bad_camera_requests_get_a_clear_error_and_the_cameras_keep_streaming(camera_sim, route, status):
    _, process, robot = camera_sim
    response = robot.session.get(robot.url + route, timeout=10)
    assert response.status_code == status, response.text
    assert response.json()["error"]
    after = robot.session.get(robot.url + "frame/wrist_1", timeout=10)
    assert after.status_code == 200 and len(after.content) == 1280 * 720 * 3
    assert process.alive()


def test_a_websocket_with_bad_arguments_is_refused_before_streaming(camera_sim):
    import simple_websocket

    _, _, robot = camera_sim
    for query, status in (("cameras=nope", 404), ("quality=0", 400), ("crop=0,0,2000,10", 400)):
        with pytest.raises(simple_websocket.ConnectionError) as refused:
            simple_websocket.Client.connect(robot.url.replace("http", "ws") + f"images?{query}")
        assert refused.value.status_code == status
