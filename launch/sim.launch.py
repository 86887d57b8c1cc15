"""The simulated Franka and franka_server_ros2: what `make sim` runs.

ros2 launch isaac_franka_bridge sim.launch.py                      # MuJoCo on the CPU
ros2 launch isaac_franka_bridge sim.launch.py backend:=isaac       # Isaac Sim on a GPU host
ros2 launch isaac_franka_bridge sim.launch.py namespace:=left host:=127.0.0.2
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from launch import LaunchDescription

ARGUMENTS = {
    "backend": ("mujoco", "physics backend: mujoco (CPU) or isaac (GPU host with Isaac Sim 6)"),
    "namespace": ("", "namespace of every topic, service and node, e.g. left / right for two arms"),
    "host": ("127.0.0.1", "address the HTTP server binds (HIL-SERL configs use 127.0.0.1, 127.0.0.2)"),
    "port": ("5000", "HTTP port of franka_server_ros2"),
    "gripper_type": ("Robotiq", "gripper: Robotiq (2F-85), Franka (the Franka hand) or None (bare flange)"),
    "real_time_factor": ("1.0", "simulation pace: 1.0 wall-clock time, 0.0 as fast as possible"),
    "state_publish_rate": ("500.0", "rate of the robot state topics [Hz]"),
    "reset_joint_target": ("[0.0, 0.0, 0.0, -1.9, 0.0, 2.0, 0.0]", "joint configuration of start-up and /jointreset"),
    "use_sim_time": ("true", "server and tools follow the simulated /clock"),
    "cameras_config": (
        "",
        "YAML of the simulated cameras ('': config/cameras.yaml, the two wrist cameras; 'none': no cameras)",
    ),
    "camera_render_divisor": ("1", "render cameras at 1/N of their size and scale up (1 = full resolution)"),
}


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("isaac_franka_bridge")
    config = os.path.join(share, "config", "sim.yaml")
    arg = LaunchConfiguration
    cameras = PythonExpression(
        [
            "'' if '",
            arg("cameras_config"),
            "' == 'none' else ('",
            arg("cameras_config"),
            "' or '",
            os.path.join(share, "config", "cameras.yaml"),
            "')",
        ]
    )
    use_sim_time = ParameterValue(PythonExpression(["'", arg("use_sim_time"), "'.lower() == 'true'"]), value_type=bool)
    sim = Node(
        package="isaac_franka_bridge",
        executable="sim_bridge",
        namespace=arg("namespace"),
        output="screen",
        emulate_tty=True,
        parameters=[
            config,
            {
                "backend": arg("backend"),
                "gripper_type": arg("gripper_type"),
                "real_time_factor": ParameterValue(arg("real_time_factor"), value_type=float),
                "state_publish_rate": ParameterValue(arg("state_publish_rate"), value_type=float),
                "reset_joint_target": ParameterValue(arg("reset_joint_target"), value_type=list[float]),
                "cameras_config": ParameterValue(cameras, value_type=str),
                "camera_render_divisor": ParameterValue(arg("camera_render_divisor"), value_type=int),
            },
        ],
    )
    server = Node(
        package="isaac_franka_bridge",
        executable="franka_server",
        namespace=arg("namespace"),
        output="screen",
        emulate_tty=True,
        parameters=[
            config,
            {
                "host": arg("host"),
                "port": ParameterValue(arg("port"), value_type=int),
                "gripper_type": arg("gripper_type"),
                "use_sim_time": use_sim_time,
                "cameras_config": ParameterValue(cameras, value_type=str),
            },
        ],
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument(name, default_value=default, description=text)
            for name, (default, text) in ARGUMENTS.items()
        ]
        + [sim, server]
    )
