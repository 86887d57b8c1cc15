"""A simulated world of Frankas and one franka_server_ros2 per robot: what `make sim` runs.

ros2 launch isaac_franka_bridge sim.launch.py                            # pick_cube: one arm, MuJoCo
ros2 launch isaac_franka_bridge sim.launch.py task:=ram_insertion        # a HIL-SERL example's world
ros2 launch isaac_franka_bridge sim.launch.py task:=object_handover      # two arms, two servers
ros2 launch isaac_franka_bridge sim.launch.py backend:=isaac gripper_type:=Franka cameras_config:=none

The task file (config/tasks/, or any path) names the robots, their grippers, base poses, cameras and
server addresses, the objects and what counts as success; it is the one home of those values. For a
one-robot world the launch arguments left empty take the file's values, and those given replace them.
"""

import os
import tempfile

import rclpy.logging
from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch_ros.actions import Node

from franka_server_ros2.camera_specs import dump_cameras
from franka_server_ros2.launch_support import rviz_available, rviz_node
from isaac_franka_bridge.backends import DEFAULT_BACKEND, check_backend
from isaac_franka_bridge.world import DEFAULT_TASK, dump_world, load_world
from launch import LaunchDescription

FROM_WORLD = "from the task file if empty"
ARGUMENTS = {
    "backend": (DEFAULT_BACKEND, "physics backend: mujoco (CPU) or isaac (GPU host with Isaac Sim 6)"),
    "task": (
        DEFAULT_TASK,
        "the task and its world: a name in config/tasks (pick_cube, ram_insertion, usb_pickup_insertion, "
        "object_handover, egg_flip, dual_arm) or a YAML file",
    ),
    "world": ("", "another name for task (a task file describes a world); set one of the two"),
    "namespace": ("", f"one-robot world: namespace of the robot's nodes and topics ({FROM_WORLD})"),
    "host": ("", f"one-robot world: address its HTTP server binds ({FROM_WORLD})"),
    "port": ("", f"one-robot world: HTTP port of its franka_server_ros2 ({FROM_WORLD})"),
    "gripper_type": ("", f"one-robot world: Robotiq, Franka or None ({FROM_WORLD})"),
    "reset_joint_target": ("", f"one-robot world: joints of start-up and /jointreset ({FROM_WORLD})"),
    "robotiq_open_position": (
        "",
        "one-robot world: the Robotiq position /open_gripper goes to, 0 (fully open) .. 255; 175 is the "
        f"published server's ({FROM_WORLD}; the file's default 0)",
    ),
    "cameras_config": ("", f"one-robot world: camera YAML; 'none': no cameras on any robot ({FROM_WORLD})"),
    "real_time_factor": (
        "",
        "simulation pace: 1.0 wall-clock time, 0.0 as fast as possible (config/sim.yaml if empty)",
    ),
    "state_publish_rate": (
        "",
        "rate of the robot state topics [Hz] (the task file's sim:, else config/sim.yaml, if empty)",
    ),
    "camera_render_divisor": (
        "",
        "render cameras at 1/N of their size and scale up (the task file's sim:, else config/sim.yaml, if empty)",
    ),
    "use_sim_time": ("true", "servers and tools follow the simulated /clock"),
    "rviz": ("false", "also start RViz with config/rviz/franka.rviz (needs rviz2: a ROS 2 desktop install)"),
}
WORLD_OVERRIDES = (
    "namespace",
    "host",
    "port",
    "gripper_type",
    "reset_joint_target",
    "robotiq_open_position",
    "cameras_config",
)
SIM_OVERRIDES = {"real_time_factor": float, "state_publish_rate": float, "camera_render_divisor": int}


def task_file(share: str, name: str) -> str:
    """config/tasks/<name>.yaml for a name, else the path given."""
    named = os.path.join(share, "config", "tasks", f"{name}.yaml")
    return named if os.path.sep not in name and not name.endswith(".yaml") else os.path.abspath(name)


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


def _task(arg) -> str:
    task, world = arg["task"], arg["world"]
    if world and task not in ("", DEFAULT_TASK, world):
        raise ValueError(f"task:={task} and world:={world} name two worlds: set one")
    return world or task or DEFAULT_TASK


def _nodes(context):
    share = get_package_share_directory("isaac_franka_bridge")
    config = os.path.join(share, "config", "sim.yaml")
    arg = context.launch_configurations
    try:
        world = load_world(task_file(share, _task(arg)), **_overrides(context))
        check_backend(arg["backend"], world)
        # a launch argument given wins over the task file's choice, which wins over config/sim.yaml
        overrides = dict(world.sim)
        overrides.update({k: _number(k, arg[k], kind) for k, kind in SIM_OVERRIDES.items() if arg[k]})
        if arg["rviz"].lower() not in ("true", "false"):
            raise ValueError(f"rviz:={arg['rviz']} must be true or false")
        if arg["rviz"].lower() == "true" and not rviz_available():
            raise ValueError("rviz:=true needs rviz2 (a ROS 2 desktop install); the bundled environment has none")
    except ValueError as exc:  # one FATAL line, exit code 1, nothing started
        rclpy.logging.get_logger("sim.launch").fatal(f"cannot start: {exc}")
        raise SystemExit(1) from None
    # the world as resolved (overrides applied, cameras inline) for the simulation, and each robot's
    # cameras in a file of their own for its server
    directory = tempfile.mkdtemp(prefix="franka_world_")
    resolved = os.path.join(directory, "world.yaml")
    with open(resolved, "w") as f:
        f.write(dump_world(world))
    use_sim_time = arg["use_sim_time"].lower() == "true"
    nodes = [
        Node(
            package="isaac_franka_bridge",
            executable="sim_bridge",
            output="screen",
            emulate_tty=True,
            parameters=[config, {"backend": arg["backend"], "world_config": resolved, **overrides}],
        )
    ]
    urls = [r.url for r in world.robots]
    for i, robot in enumerate(world.robots):
        cameras = ""
        if robot.cameras:
            cameras = os.path.join(directory, f"cameras_{i}.yaml")
            with open(cameras, "w") as f:
                f.write(dump_cameras(robot.cameras))
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
                        "robotiq_open_position": robot.robotiq_open_position,
                        "controller": robot.controller,
                        "base_frame": robot.base_frame,
                        "cameras_config": cameras,
                        "world_servers": [u for u in urls if u != robot.url] or [""],
                        "use_sim_time": use_sim_time,
                    },
                ],
            )
        )
    if arg["rviz"].lower() == "true":  # the first robot's base as the fixed frame
        nodes.append(rviz_node(world.robots[0].namespace, world.robots[0].base_frame))
    return nodes


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [DeclareLaunchArgument(n, default_value=d, description=t) for n, (d, t) in ARGUMENTS.items()]
        + [OpaqueFunction(function=_nodes)]
    )
