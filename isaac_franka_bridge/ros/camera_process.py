"""The camera process: renders the simulated cameras and publishes them on ROS 2.

Started by the sim bridge (one per simulated robot). It reads the simulation's state from shared
memory, renders each camera when its frame is due in simulated time, and publishes
`<camera>/image_raw` and `<camera>/camera_info` from node `franka_sim_cameras`, under the robot's
namespace. It runs at a lower CPU priority than the simulation: when the CPU is short, frames
come late, the physics does not.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import cv2
import rclpy
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from ..sim.cameras import CameraSpec, Frame, SharedState, render_loop
from . import messages as msgs

RENDER_NICENESS = 5  # below the simulation, not starved by it


def main(
    state_name: str,
    state_size: int,
    make_renderer: Callable[[], object],
    cameras: list[CameraSpec],
    namespace: str,
    parent_pid: int,
) -> None:
    os.nice(RENDER_NICENESS)
    rclpy.init(args=["--ros-args", "-r", f"__ns:={namespace or '/'}"])
    node = Node("franka_sim_cameras")
    publishers = {
        c.name: (
            node.create_publisher(Image, f"{c.name}/image_raw", qos_profile_sensor_data),
            node.create_publisher(CameraInfo, f"{c.name}/camera_info", qos_profile_sensor_data),
            msgs.camera_info_msg(c, f"{c.name}_optical_frame"),
        )
        for c in cameras
    }

    def publish(frame: Frame) -> None:
        image_publisher, info_publisher, info = publishers[frame.camera.name]
        stamp = msgs.stamp_of(frame.stamp)
        info.header.stamp = stamp
        # bgr8, as a RealSense color stream: the server hands the bytes on without converting them
        bgr = cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR)
        image_publisher.publish(msgs.image_msg(stamp, info.header.frame_id, bgr, "bgr8"))
        info_publisher.publish(info)

    state = SharedState(state_size, state_name)
    renderer = make_renderer()
    node.get_logger().info(f"rendering {', '.join(c.name for c in cameras)}")
    try:
        # until Ctrl-C (rclpy shuts down) or the simulation process is gone
        render_loop(renderer, cameras, state.read, publish, lambda: rclpy.ok() and os.getppid() == parent_pid)
    except KeyboardInterrupt:
        pass
    finally:
        renderer.close()
        state.close()
        node.destroy_node()
        rclpy.try_shutdown()
