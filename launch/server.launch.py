"""franka_server_ros2 alone, in front of any robot that publishes the contract's topics.

ros2 launch isaac_franka_bridge server.launch.py                                # http://127.0.0.1:5000/
ros2 launch isaac_franka_bridge server.launch.py host:=0.0.0.0 access_token:=$(cat ~/.franka_token)
ros2 launch isaac_franka_bridge server.launch.py namespace:=right port:=5001 gripper_type:=Franka

The robot behind it can be this package's simulator on another machine of the same ROS domain, the
real arm (real.launch.py starts its own server), or the original ROS 1 stack through a ROS 1/2 bridge:
the server only needs the topics, services and actions of docs/ros_interfaces.md under `namespace`.
A bad argument stops the launch with one FATAL line before anything starts.
"""

import os

import rclpy.logging
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import Node

from franka_server_ros2.access import parse_networks, parse_token
from franka_server_ros2.grippers import ROBOTIQ_OPEN_POSITION, ROBOTIQ_PUBLISHED_OPEN_POSITION
from franka_server_ros2.launch_support import rviz_node
from launch import LaunchDescription

GRIPPERS = ("Robotiq", "Franka", "None")
CONTROLLERS = ("impedance", "wrench")
ARGUMENTS = {
    "namespace": ("", "namespace of the robot's topics and of the server node"),
    "host": ("127.0.0.1", "address the HTTP server binds; anything but loopback is logged at start-up"),
    "port": ("5000", "HTTP port"),
    "gripper_type": ("Robotiq", "Robotiq, Franka or None, as the original server's flag"),
    "robotiq_open_position": (
        str(ROBOTIQ_OPEN_POSITION),
        "Robotiq: the position /open_gripper goes to, 0 (fully open) .. 255; "
        f"{ROBOTIQ_PUBLISHED_OPEN_POSITION} is the published robotiq_gripper_server's (docs/differences.md)",
    ),
    "controller": ("impedance", "impedance: franka_server's routes; wrench: the egg-flip server's routes"),
    "base_frame": ("panda_link0", "frame_id of the poses the server publishes (the robot's base)"),
    "cameras_config": ("", "camera YAML (config/cameras.yaml format) whose frames the server serves; '' none"),
    "access_token": ("", "shared token clients must send (http://host:port/<token>/ or a Bearer header); '' none"),
    "allowed_clients": ("", "client addresses or networks served, comma-separated (192.168.1.0/24,10.0.0.7); '' any"),
    "gripper_action": ("franka_gripper/gripper_action", "the robot's GripperCommand action (relative to namespace)"),
    "gripper_joint_states": ("franka_gripper/joint_states", "the robot's gripper JointState topic"),
    "params_file": ("", "YAML of further franka_server parameters (workspace_min, state_timeout, ...); '' none"),
    "use_sim_time": ("false", "follow /clock (true when a simulator runs the robot)"),
    "rviz": ("false", "also start RViz with the package's configuration (needs rviz2: a ROS 2 desktop install)"),
}


def fatal(message: str) -> None:
    """One FATAL line, exit code 1, nothing started (as sim.launch.py)."""
    rclpy.logging.get_logger("server.launch").fatal(f"cannot start: {message}")
    raise SystemExit(1)


def server_parameters(arg) -> dict:
    """The franka_server parameters of the launch arguments; ValueError names a bad one."""
    try:
        port = int(arg["port"])
    except ValueError:
        raise ValueError(f"port:={arg['port']} is not an integer") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"port:={port} is not a TCP port (1..65535)")
    if arg["gripper_type"] not in GRIPPERS:
        raise ValueError(f"gripper_type:={arg['gripper_type']} must be one of {', '.join(GRIPPERS)}")
    try:
        open_position = int(arg["robotiq_open_position"])
    except ValueError:
        open_position = -1
    if not 0 <= open_position <= 255:
        raise ValueError(f"robotiq_open_position:={arg['robotiq_open_position']} must be an integer 0..255")
    controller = arg.get("controller", "impedance")
    if controller not in CONTROLLERS:
        raise ValueError(f"controller:={controller} must be one of {', '.join(CONTROLLERS)}")
    if not arg["host"]:
        raise ValueError("host:= is empty (127.0.0.1 serves this machine only)")
    if arg["use_sim_time"].lower() not in ("true", "false"):
        raise ValueError(f"use_sim_time:={arg['use_sim_time']} must be true or false")
    parse_token(arg["access_token"], "access_token:=")
    allowed = [a.strip() for a in arg["allowed_clients"].replace(" ", ",").split(",") if a.strip()]
    parse_networks(allowed)
    if arg["cameras_config"] and not os.path.isfile(arg["cameras_config"]):
        raise ValueError(f"cameras_config:={arg['cameras_config']} is not a file")
    params = {
        "host": arg["host"],
        "port": port,
        "gripper_type": arg["gripper_type"],
        "robotiq_open_position": open_position,
        "controller": controller,
        "base_frame": arg["base_frame"],
        "cameras_config": arg["cameras_config"],
        "access_token": arg["access_token"],
        "use_sim_time": arg["use_sim_time"].lower() == "true",
    }
    if allowed:  # an empty list is no valid parameter value: left out, it means "any client"
        params["allowed_clients"] = allowed
    return params


def gripper_remappings(arg) -> list[tuple[str, str]]:
    """The contract's gripper names, remapped to the robot's where they differ (another gripper driver)."""
    return [
        (name, arg[key])
        for key, name in (
            ("gripper_action", "franka_gripper/gripper_action"),
            ("gripper_joint_states", "franka_gripper/joint_states"),
        )
        if arg[key] != name
    ]


def _nodes(context):
    arg = context.launch_configurations
    try:
        params = server_parameters(arg)
        files = [arg["params_file"]] if arg["params_file"] else []
        if files and not os.path.isfile(files[0]):
            raise ValueError(f"params_file:={files[0]} is not a file")
        if arg["rviz"].lower() not in ("true", "false"):
            raise ValueError(f"rviz:={arg['rviz']} must be true or false")
    except ValueError as exc:
        fatal(str(exc))
    nodes = [
        Node(
            package="isaac_franka_bridge",
            executable="franka_server",
            namespace=arg["namespace"],
            output="screen",
            emulate_tty=True,
            parameters=[*files, params],
            remappings=gripper_remappings(arg),
        )
    ]
    if arg["rviz"].lower() == "true":
        nodes.append(rviz_node(arg["namespace"], params["base_frame"]))
    return nodes


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [DeclareLaunchArgument(n, default_value=d, description=t) for n, (d, t) in ARGUMENTS.items()]
        + [OpaqueFunction(function=_nodes)]
    )
