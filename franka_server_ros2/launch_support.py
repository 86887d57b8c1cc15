"""Pieces the package's launch files share (sim, real and server alone): no simulator, no franka_ros2."""

from __future__ import annotations

import os

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch_ros.actions import Node

RVIZ_CONFIG = ("config", "rviz", "franka.rviz")


def rviz_node(namespace: str, fixed_frame: str) -> Node:
    """RViz with the package's display configuration (robot, TF, O_T_EE, equilibrium_pose, a camera)."""
    config = os.path.join(get_package_share_directory("isaac_franka_bridge"), *RVIZ_CONFIG)
    return Node(
        package="rviz2",
        executable="rviz2",
        namespace=namespace,
        arguments=["-d", config, "-f", fixed_frame],  # rviz2: display config, fixed frame
        output="screen",
    )


def rviz_available() -> bool:
    """Whether rviz2 is installed (a ROS 2 desktop install; the bundled environment has none)."""
    try:
        get_package_share_directory("rviz2")
    except PackageNotFoundError:
        return False
    return True
