"""Simulated cameras on ROS 2 (groundwork of the camera issue): frames of the configured size and
encoding, with intrinsics from the configured field of view. Real sim bridge + MuJoCo EGL rendering."""

import math

import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from isaac_franka_bridge.sim.cameras import load_cameras

from conftest import second_robot, wait_until


@pytest.fixture(scope="module")
def camera_sim():
    with second_robot("cameras_config:=") as (_, node, process):
        yield node, process


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
    node, process = camera_sim
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
        assert (image.height, image.width, image.encoding, image.step) == (720, 1280, "rgb8", 1280 * 3)
        pixels = np.frombuffer(bytes(image.data), np.uint8).reshape(720, 1280, 3)
        assert pixels.std() > 5.0, "a blank frame"
        focal = 0.5 * 720 / math.tan(math.radians(42.5) / 2)
        assert info.k[0] == pytest.approx(focal) and info.header.frame_id == f"{camera}_optical_frame"
        assert image.header.stamp == info.header.stamp or info.header.stamp.sec >= 0
    finally:
        node.destroy_subscription(image_sub)
        node.destroy_subscription(info_sub)
