"""The camera process: renders the simulated cameras and hands their frames to whoever reads them.

Started by the sim bridge (one per simulated world). It reads the simulation's state from shared
memory and renders each camera when its frame is due in simulated time and somebody reads it, then
publishes `<camera>/image_raw` and `<camera>/camera_info` from node `franka_sim_cameras`, under the
robot's namespace, and writes the frame into the camera's shared-memory ring for readers on this
host (franka_server_ros2/cameras.py has the ring's layout and name). It runs at a lower CPU priority
than the simulation: when the CPU is short, frames come late, the physics does not.

Who reads a camera: a subscriber to its image_raw (the server subscribes while HTTP clients ask for
its frames), or a reader of its ring (clients/virtual_realsense on this host, which beats in the
ring while it reads). A due frame with neither is not rendered; camera_info keeps its rate for its
own subscribers. A reader that appears gets the next due frame.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable

import cv2
import numpy as np
import rclpy
from ament_index_python.packages import get_package_share_directory
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from franka_server_ros2.camera_specs import CameraSpec
from franka_server_ros2.cameras import RING_PREFIX, ring_name
from franka_server_ros2.image_cdr import stamp_seconds

from ..sim.cameras import Frame, FrameRing, SharedState, remove_stale_rings, render_loop
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
    """Hands the rendered frames of every camera to its readers (ROS 2 subscribers, the camera's shared-memory
    ring), and reports its own health on /diagnostics (1 Hz)."""

    def __init__(self, node: Node, cameras: list[CameraSpec], rings: bool = True) -> None:
        self.node = node
        self.cameras = {c.name: c for c in cameras}
        self.images = {}
        self.rings: dict[str, FrameRing | None] = {}
        domain = node.context.get_domain_id()
        if rings:  # this user's rings of simulations that were killed before they could remove them
            remove_stale_rings(f"{RING_PREFIX}{os.getuid()}.")
        for c in cameras:
            frame_id = f"{c.name}_optical_frame"
            image_publisher = node.create_publisher(Image, f"{c.name}/image_raw", qos_profile_sensor_data)
            self.images[c.name] = (
                image_publisher,
                # bgr8, as a RealSense color stream: the server hands the bytes on without converting them
                SerializedImage(frame_id, c.width, c.height, "bgr8"),
                node.create_publisher(CameraInfo, f"{c.name}/camera_info", qos_profile_sensor_data),
                msgs.camera_info_msg(c, frame_id),
            )
            self.rings[c.name] = self._ring(c, ring_name(domain, image_publisher.topic_name)) if rings else None
        self.diagnostics = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._window_start = time.monotonic()
        self._frames = dict.fromkeys(self.cameras, 0)
        self._skipped = dict.fromkeys(self.cameras, 0)
        self._render_s = dict.fromkeys(self.cameras, 0.0)
        self._publish_s = dict.fromkeys(self.cameras, 0.0)

    def _ring(self, camera: CameraSpec, name: str) -> FrameRing | None:
        try:
            return FrameRing(name, camera.width, camera.height, 1.0 / camera.fps)
        except OSError as exc:
            self.node.get_logger().warn(
                f"{camera.name}: no shared-memory ring ({exc}); clients on this host read its frames over HTTP"
            )
            return None

    def _readers(self, name: str) -> tuple[bool, bool]:
        """(a ROS 2 subscriber to the camera's image_raw, a reader of its ring that beat recently)."""
        ring = self.rings[name]
        return self.images[name][0].get_subscription_count() > 0, ring is not None and ring.has_reader()

    def wanted(self, camera: CameraSpec) -> bool:
        """Whether anybody reads the camera: a due frame of a camera nobody reads is not rendered."""
        return any(self._readers(camera.name))

    def publish(self, frame: Frame) -> None:
        start = time.perf_counter()
        name = frame.camera.name
        image_publisher, image, info_publisher, info = self.images[name]
        to_ros, to_ring = self._readers(name)
        sec, nanosec = msgs.split_stamp(frame.stamp)
        if to_ring:
            ring = self.rings[name]
            pixels = ring.begin()
            cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR, dst=pixels)
            ring.commit(stamp_seconds(sec, nanosec), frame.wall_time)  # the image message's stamp, to the bit
            if to_ros:
                np.copyto(image.pixels, pixels)
        else:  # (rendered for ROS; also when its subscriber left since: the frame goes out all the same)
            to_ros = True
            cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR, dst=image.pixels)
        if to_ros:
            image_publisher.publish(image.serialize(sec, nanosec))
        info.header.stamp = Time(sec=sec, nanosec=nanosec)
        info_publisher.publish(info)
        self._frames[name] += 1
        self._render_s[name] += frame.render_s
        self._publish_s[name] += time.perf_counter() - start

    def skip(self, camera: CameraSpec, stamp: float) -> None:
        """A due frame nobody reads: not rendered; camera_info keeps its rate for its own subscribers."""
        self._skipped[camera.name] += 1
        _, _, info_publisher, info = self.images[camera.name]
        if info_publisher.get_subscription_count() > 0:
            sec, nanosec = msgs.split_stamp(stamp)
            info.header.stamp = Time(sec=sec, nanosec=nanosec)
            info_publisher.publish(info)

    def idle(self) -> None:
        """At every pass of the render loop: the rings' writer heartbeat, the diagnostics once a second."""
        for ring in self.rings.values():
            if ring is not None:
                ring.beat()
        if time.monotonic() - self._window_start >= 1.0:
            self._publish_diagnostics()

    def close(self) -> None:
        for ring in self.rings.values():
            if ring is not None:
                ring.close()

    def _publish_diagnostics(self) -> None:
        now = time.monotonic()
        elapsed, self._window_start = now - self._window_start, now
        statuses = []
        for name, camera in self.cameras.items():
            frames, skipped = self._frames[name], self._skipped[name]
            rate = frames / elapsed
            ok = (frames + skipped) / elapsed >= 0.9 * camera.fps
            to_ros, to_ring = self._readers(name)
            if not ok:
                message = f"{rate:.1f} of {camera.fps:g} frames/s: the CPU is short"
            elif frames == 0:
                message = "idle: nobody reads it (no subscriber, HTTP client or shared-memory reader)"
            else:
                message = "rendering"
            statuses.append(
                DiagnosticStatus(
                    level=DiagnosticStatus.OK if ok else DiagnosticStatus.WARN,
                    name=f"franka_sim_cameras: {name}",
                    hardware_id=camera.serial_number,
                    message=message,
                    values=[
                        KeyValue(key="frame_rate", value=f"{rate:.1f}"),
                        KeyValue(key="target_frame_rate", value=f"{camera.fps:g}"),
                        KeyValue(key="skipped_frame_rate", value=f"{skipped / elapsed:.1f}"),
                        KeyValue(key="ros_subscriber", value=str(to_ros).lower()),
                        KeyValue(key="shared_memory_reader", value=str(to_ring).lower()),
                        KeyValue(key="render_ms", value=f"{1e3 * self._render_s[name] / max(frames, 1):.1f}"),
                        KeyValue(key="publish_ms", value=f"{1e3 * self._publish_s[name] / max(frames, 1):.1f}"),
                    ],
                )
            )
            self._frames[name], self._skipped[name] = 0, 0
            self._render_s[name], self._publish_s[name] = 0.0, 0.0
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
        render_loop(
            renderer,
            cameras,
            state.read,
            publisher.publish,
            lambda: rclpy.ok() and os.getppid() == parent_pid,
            wanted=publisher.wanted,
            on_skip=publisher.skip,
            idle=publisher.idle,
        )
    except KeyboardInterrupt:
        pass
    finally:
        publisher.close()
        renderer.close()
        state.close()
        node.destroy_node()
        rclpy.try_shutdown()
