"""A simulated world of Frankas and one franka_server_ros2 per robot: what `make sim` runs.

ros2 launch isaac_franka_bridge sim.launch.py                      # one arm, MuJoCo on the CPU
ros2 launch isaac_franka_bridge sim.launch.py world:=dual_arm      # object_handover's two arms
ros2 launch isaac_franka_bridge sim.launch.py backend:=isaac gripper_type:=Franka cameras_config:=none

The world file (config/worlds/, or any path) names the robots, their grippers, base poses and
server addresses; it is the one home of those values. For a one-robot world the launch arguments
left empty take the file's values, and those given replace them.
"""

import os
import tempfile

import rclpy.logging
from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import Node

from isaac_franka_bridge.backends import DEFAULT_BACKEND, check_backend
from isaac_franka_bridge.world import dump_world, load_world
from launch import LaunchDescription

FROM_WORLD = "from the world file if empty"
ARGUMENTS = {
    "backend": (DEFAULT_BACKEND, "physics backend: mujoco (CPU) or isaac (GPU host with Isaac Sim 6)"),
    "world": ("single_arm", "world: a name in config/worlds (single_arm, dual_arm) or a YAML file"),
    "namespace": ("", f"one-robot world: namespace of the robot's nodes and topics ({FROM_WORLD})"),
    "host": ("", f"one-robot world: address its HTTP server binds ({FROM_WORLD})"),
    "port": ("", f"one-robot world: HTTP port of its franka_server_ros2 ({FROM_WORLD})"),
    "gripper_type": ("", f"one-robot world: Robotiq, Franka or None ({FROM_WORLD})"),
    "reset_joint_target": ("", f"one-robot world: joints of start-up and /jointreset ({FROM_WORLD})"),
    "cameras_config": ("", f"one-robot world: camera YAML; 'none': no cameras on any robot ({FROM_WORLD})"),
    "real_time_factor": (
        "",
        "simulation pace: 1.0 wall-clock time, 0.0 as fast as possible (config/sim.yaml if empty)",
    ),
    "state_publish_rate": ("", "rate of the robot state topics [Hz] (config/sim.yaml if empty)"),
    "camera_render_divisor": ("", "render cameras at 1/N of their size and scale up (config/sim.yaml if empty)"),
    "use_sim_time": ("true", "servers and tools follow the simulated /clock"),
}
WORLD_OVERRIDES = ("namespace", "host", "port", "gripper_type", "reset_joint_target", "cameras_config")
SIM_OVERRIDES = {"real_time_factor": float, "state_publish_rate": float, "camera_render_divisor": int}


def world_file(share: str, world: str) -> str:
    named = os.path.join(share, "config", "worlds", f"{world}.yaml")
    return named if os.path.sep not in world and not world.endswith(".yaml") else os.path.abspath(world)


def _overrides(context) -> dict:
    values = {name: context.launch_configurations[name] for name in WORLD_OVERRIDES}
    if values["reset_joint_target"]:
        text = values["reset_joint_target"].strip("[] ")
        values["reset_joint_target"] = [v for v in text.replace(",", " ").split()]
    return values


def _number(name: str, text: str, kind: type):
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{name}:={text} is not {'an integer' if kind is int else 'a number'}") from None


def _nodes(context):
    share = get_package_share_directory("isaac_franka_bridge")
    config = os.path.join(share, "config", "sim.yaml")
    arg = context.launch_configurations
    try:
        world = load_world(world_file(share, arg["world"]), **_overrides(context))
        check_backend(arg["backend"], world)
        overrides = {k: _number(k, arg[k], kind) for k, kind in SIM_OVERRIDES.items() if arg[k]}
    except ValueError as exc:  # one FATAL line, exit code 1, nothing started
        rclpy.logging.get_logger("sim.launch").fatal(f"cannot start: {exc}")
        raise SystemExit(1) from None
    resolved = tempfile.NamedTemporaryFile("w", prefix="franka_world_", suffix=".yaml", delete=False)
    with resolved:
        resolved.write(dump_world(world))
    use_sim_time = arg["use_sim_time"].lower() == "true"
    nodes = [
        Node(
            package="isaac_franka_bridge",
            executable="sim_bridge",
            output="screen",
            emulate_tty=True,
            parameters=[config, {"backend": arg["backend"], "world_config": resolved.name, **overrides}],
        )
    ]
    for robot in world.robots:
        nodes.append(
            Node(
                package="isaac_franka_bridge",
                executable="franka_server",
                namespace=robot.namespace,
                output="screen",
                emulate_tty=True,
                parameters=[
                    config,
                    {
                        "host": robot.host,
                        "port": robot.port,
                        "gripper_type": robot.gripper_type,
                        "base_frame": robot.base_frame,
                        "cameras_config": robot.cameras_config,
                        "use_sim_time": use_sim_time,
                    },
                ],
            )
        )
    return nodes


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [DeclareLaunchArgument(n, default_value=d, description=t) for n, (d, t) in ARGUMENTS.items()]
        + [OpaqueFunction(function=_nodes)]
    )
