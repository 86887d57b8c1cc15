"""The camera process: renders the simulated cameras and publishes them on ROS 2.

Started by the sim bridge (one per simulated robot). It reads the simulation's state from shared
memory, renders each camera when its frame is due in simulated time, and publishes
`<camera>/image_raw` and `<camera>/camera_info` from node `franka_sim_cameras`, under the robot's
namespace. It runs at a lower CPU priority than the simulation: when the CPU is short, frames
come late, the physics does not.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable

import cv2
import rclpy
from ament_index_python.packages import get_package_share_directory
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from franka_server_ros2.camera_specs import CameraSpec

from ..sim.cameras import Frame, SharedState, render_loop
from . import messages as msgs
from .cdr import SerializedImage

RENDER_NICENESS = 5  # below the simulation, not starved by it
PR_SET_NAME = 15  # prctl option, linux/prctl.h
FASTDDS_PROFILE = "config/fastdds_camera_publisher.xml"  # why: see the file


def use_large_frame_transport() -> None:
    """Fast DDS settings that deliver every 2.7 MB frame, unless the user chose a profile of their own."""
    if os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp") != "rmw_fastrtps_cpp":
        return
    if "FASTRTPS_DEFAULT_PROFILES_FILE" in os.environ or "FASTDDS_DEFAULT_PROFILES_FILE" in os.environ:
        return
    share = get_package_share_directory("isaac_franka_bridge")
    os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = os.path.join(share, FASTDDS_PROFILE)


class CameraPublisher:
    """Publishes the rendered frames of every camera, and its own health on /diagnostics (1 Hz)."""

    def __init__(self, node: Node, cameras: list[CameraSpec]) -> None:
        self.node = node
        self.cameras = {c.name: c for c in cameras}
        self.images = {}
        for c in cameras:
            frame_id = f"{c.name}_optical_frame"
            self.images[c.name] = (
                node.create_publisher(Image, f"{c.name}/image_raw", qos_profile_sensor_data),
                # bgr8, as a RealSense color stream: the server hands the bytes on without converting them
                SerializedImage(frame_id, c.width, c.height, "bgr8"),
                node.create_publisher(CameraInfo, f"{c.name}/camera_info", qos_profile_sensor_data),
                msgs.camera_info_msg(c, frame_id),
            )
        self.diagnostics = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._window_start = time.monotonic()
        self._frames = dict.fromkeys(self.cameras, 0)
        self._render_s = dict.fromkeys(self.cameras, 0.0)
        self._publish_s = dict.fromkeys(self.cameras, 0.0)

    def publish(self, frame: Frame) -> None:
        start = time.perf_counter()
        name = frame.camera.name
        image_publisher, image, info_publisher, info = self.images[name]
        sec, nanosec = msgs.split_stamp(frame.stamp)
        cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR, dst=image.pixels)
        image_publisher.publish(image.serialize(sec, nanosec))
        info.header.stamp = Time(sec=sec, nanosec=nanosec)
        info_publisher.publish(info)
        self._frames[name] += 1
        self._render_s[name] += frame.render_s
        self._publish_s[name] += time.perf_counter() - start
        if start - self._window_start >= 1.0:
            self._publish_diagnostics()

    def _publish_diagnostics(self) -> None:
        now = time.monotonic()
        elapsed, self._window_start = now - self._window_start, now
        statuses = []
        for name, camera in self.cameras.items():
            frames = self._frames[name]
            rate = frames / elapsed
            ok = rate >= 0.9 * camera.fps
            statuses.append(
                DiagnosticStatus(
                    level=DiagnosticStatus.OK if ok else DiagnosticStatus.WARN,
                    name=f"franka_sim_cameras: {name}",
                    hardware_id=camera.serial_number,
                    message="rendering" if ok else f"{rate:.1f} of {camera.fps:g} frames/s: the CPU is short",
                    values=[
                        KeyValue(key="frame_rate", value=f"{rate:.1f}"),
                        KeyValue(key="target_frame_rate", value=f"{camera.fps:g}"),
                        KeyValue(key="render_ms", value=f"{1e3 * self._render_s[name] / max(frames, 1):.1f}"),
                        KeyValue(key="publish_ms", value=f"{1e3 * self._publish_s[name] / max(frames, 1):.1f}"),
                    ],
                )
            )
            self._frames[name], self._render_s[name], self._publish_s[name] = 0, 0.0, 0.0
        msg = DiagnosticArray(status=statuses)
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.diagnostics.publish(msg)


def name_process(name: str) -> None:
    """What top and ps show for this process (Linux; 15 characters), rather than `python`."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


def main(
    state_name: str,
    state_size: int,
    make_renderer: Callable[[], object],
    cameras: list[CameraSpec],
    namespace: str,
    parent_pid: int,
) -> None:
    name_process("sim_cameras")
    os.nice(RENDER_NICENESS)
    use_large_frame_transport()
    rclpy.init(args=["--ros-args", "-r", f"__ns:={namespace or '/'}"])
    node = Node("franka_sim_cameras")
    publisher = CameraPublisher(node, cameras)
    state = SharedState(state_size, state_name)
    renderer = make_renderer()
    node.get_logger().info(f"rendering {', '.join(c.name for c in cameras)}")
    try:
        # until Ctrl-C (rclpy shuts down) or the simulation process is gone
        render_loop(renderer, cameras, state.read, publisher.publish, lambda: rclpy.ok() and os.getppid() == parent_pid)
    except KeyboardInterrupt:
        pass
    finally:
        renderer.close()
        state.close()
        node.destroy_node()
        rclpy.try_shutdown()
