"""The real Franka arm behind the same franka_server_ros2: what changes from sim.launch.py is this file.

ros2 launch isaac_franka_bridge real.launch.py robot_ip:=172.16.0.2                        # FR3 + Franka hand
ros2 launch isaac_franka_bridge real.launch.py robot_ip:=172.16.0.2 gripper_type:=Robotiq   # + a Robotiq driver
ros2 launch isaac_franka_bridge real.launch.py robot_ip:=172.16.0.2 host:=0.0.0.0 access_token:=...

What it starts, in order (docs/real_robot.md):
1. franka_ros2's bringup (franka_bringup/launch/franka.launch.py): ros2_control with the arm's hardware,
   franka_robot_state_broadcaster (franka_msgs/FrankaRobotState), franka_gripper for the Franka hand.
2. The Cartesian impedance controller, loaded and switched on by controller_manager's spawner:
   crisp_controllers' CartesianController by default (config/real_crisp_controller.yaml), which takes a
   PoseStamped target; franka_ros2 ships none that takes an equilibrium pose.
3. Once the controller runs: real_state_adapter (isaac_franka_bridge/real/adapter_node.py, config/real.yaml),
   which gives the robot the contract's topics, services and parameters (docs/ros_interfaces.md), and the
   same franka_server_ros2 as in simulation.

Only this path needs franka_ros2 and the controller: without them it stops with one FATAL line that says
what to install, before anything starts. sim.launch.py never imports any of it.
"""

import importlib.util
import os
import tempfile

import rclpy.logging
import yaml
from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from launch.actions import (
    DeclareLaunchArgument,
    IncludeLaunchDescription,
    OpaqueFunction,
    RegisterEventHandler,
    Shutdown,
)
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch_ros.actions import Node

from franka_server_ros2.grippers import ROBOTIQ_OPEN_POSITION, ROBOTIQ_PUBLISHED_OPEN_POSITION
from franka_server_ros2.launch_support import rviz_node
from launch import LaunchDescription

PACKAGE = "isaac_franka_bridge"
ROBOT_TYPES = ("fr3", "fp3", "fer")  # franka_ros2's arm types; fer is the Panda (Franka Emika Robot)
GRIPPERS = ("Franka", "Robotiq", "None")
ARGUMENTS = {
    "robot_ip": ("", "address of the arm's controller (FCI); required"),
    "robot_type": ("fr3", "arm type for franka_ros2: fr3, fp3 or fer (Panda)"),
    "namespace": ("", "namespace of the robot's nodes and topics (and franka_ros2's)"),
    "gripper_type": ("Franka", "Franka (the hand, via franka_gripper), Robotiq (a driver of its own) or None"),
    "host": ("127.0.0.1", "address the HTTP server binds; anything but loopback is logged at start-up"),
    "port": ("5000", "HTTP port of franka_server_ros2"),
    "access_token": ("", "shared token clients must send (http://host:port/<token>/ or a Bearer header); '' none"),
    "allowed_clients": ("", "client addresses or networks served, comma-separated; '' any"),
    "controller_name": ("crisp_cartesian_impedance_controller", "name of the Cartesian controller in ros2_control"),
    "controller_config": ("", "YAML of the controller's type and parameters ('' = config/real_crisp_controller.yaml)"),
    "end_effector_frame": (
        "",
        "URDF frame the controller moves ('' = <robot_type>_hand_tcp with the Franka hand, else <robot_type>_link8)",
    ),
    "adapter_config": ("", "parameters of real_state_adapter ('' = config/real.yaml)"),
    "robotiq_open_position": (
        str(ROBOTIQ_OPEN_POSITION),
        "Robotiq: the position /open_gripper goes to, 0 (fully open) .. 255; "
        f"{ROBOTIQ_PUBLISHED_OPEN_POSITION} is the published robotiq_gripper_server's (docs/differences.md)",
    ),
    "gripper_action": ("robotiq_gripper_controller/gripper_cmd", "Robotiq: the driver's GripperCommand action"),
    "gripper_joint_states": ("joint_states", "Robotiq: the driver's JointState topic (robotiq_85_left_knuckle_joint)"),
    "rviz": ("false", "also start RViz with the package's configuration (needs rviz2)"),
}
# what this path needs installed; which controller package comes from the controller's `type`
FRANKA_PACKAGES = ("franka_bringup", "franka_msgs", "franka_robot_state_broadcaster", "controller_manager")


def fatal(message: str) -> None:
    """One FATAL line, exit code 1, nothing started (as sim.launch.py and server.launch.py)."""
    rclpy.logging.get_logger("real.launch").fatal(f"cannot start: {message}")
    raise SystemExit(1)


def _server_launch():
    """server.launch.py beside this file: its checks of the server's arguments and its RViz node."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server.launch.py")
    spec = importlib.util.spec_from_file_location("isaac_franka_bridge_server_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def installed(package: str) -> bool:
    try:
        get_package_share_directory(package)
    except PackageNotFoundError:
        return False
    return True


def controller_parameters(arg, share: str) -> dict:
    """The controller's parameters: its YAML plus the arm's joints and frames."""
    path = arg["controller_config"] or os.path.join(share, "config", "real_crisp_controller.yaml")
    try:
        with open(path) as f:
            params = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"controller_config:={path} cannot be read: {exc}") from None
    if not isinstance(params, dict) or not isinstance(params.get("type"), str) or "/" not in params["type"]:
        raise ValueError(f"controller_config:={path} needs a `type: <package>/<Controller>` and its parameters")
    robot = arg["robot_type"]
    hand = arg["gripper_type"] == "Franka"
    params.setdefault("joints", [f"{robot}_joint{i}" for i in range(1, 8)])
    params.setdefault("base_frame", f"{robot}_link0")
    params["end_effector_frame"] = arg["end_effector_frame"] or f"{robot}_{'hand_tcp' if hand else 'link8'}"
    return params


def _check(arg, server) -> dict:
    """The server's parameters; ValueError names the first bad argument."""
    if not arg["robot_ip"]:
        raise ValueError("robot_ip:= is required (the address of the arm's controller, e.g. 172.16.0.2)")
    if arg["robot_type"] not in ROBOT_TYPES:
        raise ValueError(f"robot_type:={arg['robot_type']} must be one of {', '.join(ROBOT_TYPES)}")
    if arg["gripper_type"] not in GRIPPERS:
        raise ValueError(f"gripper_type:={arg['gripper_type']} must be one of {', '.join(GRIPPERS)}")
    if arg["rviz"].lower() not in ("true", "false"):
        raise ValueError(f"rviz:={arg['rviz']} must be true or false")
    for name in ("controller_config", "adapter_config"):
        if arg[name] and not os.path.isfile(arg[name]):
            raise ValueError(f"{name}:={arg[name]} is not a file")
    values = {**arg, "base_frame": f"{arg['robot_type']}_link0", "cameras_config": "", "use_sim_time": "false"}
    return server.server_parameters(values)


def _missing(arg, controller_type: str) -> list[str]:
    needed = list(FRANKA_PACKAGES) + [controller_type.split("/")[0]]
    if arg["gripper_type"] == "Franka":
        needed.append("franka_gripper")
    if arg["rviz"].lower() == "true":
        needed.append("rviz2")
    return [p for p in needed if not installed(p)]


def _launch(context):
    arg = context.launch_configurations
    share = get_package_share_directory(PACKAGE)
    server = _server_launch()
    try:
        server_params = _check(arg, server)
        controller = controller_parameters(arg, share)
    except ValueError as exc:
        fatal(str(exc))
    missing = _missing(arg, controller["type"])
    if missing:
        fatal(
            f"the real arm needs franka_ros2 (>= 2.0) and the {controller['type'].split('/')[0]} controller, and "
            f"this ROS 2 has no {', '.join(missing)}. Build them in a workspace, source it and run again "
            "(docs/real_robot.md); the simulated arm needs none of them: sim.launch.py"
        )
    name, namespace = arg["controller_name"], arg["namespace"]
    params_file = tempfile.NamedTemporaryFile("w", prefix=f"{name}_", suffix=".yaml", delete=False)
    with params_file:
        yaml.safe_dump({f"/**/{name}": {"ros__parameters": controller}}, params_file)
    bringup = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            os.path.join(get_package_share_directory("franka_bringup"), "launch", "franka.launch.py")
        ),
        launch_arguments={
            "robot_ip": arg["robot_ip"],
            "robot_type": arg["robot_type"],
            "arm_id": arg["robot_type"],  # the same argument's name in franka_ros2 2.0
            "namespace": namespace,
            "load_gripper": "true" if arg["gripper_type"] == "Franka" else "false",
            "use_fake_hardware": "false",
        }.items(),
    )
    spawner = Node(
        package="controller_manager",
        executable="spawner",
        namespace=namespace,
        arguments=[name, "--param-file", params_file.name, "--controller-manager-timeout", "60"],
        output="screen",
    )

    def after_spawner(event, context):
        return after_controller(event.returncode, context, server_params, server)

    return [bringup, spawner, RegisterEventHandler(OnProcessExit(target_action=spawner, on_exit=after_spawner))]


def after_controller(returncode: int, context, server_params: dict, server) -> list:
    """Once the spawner has ended: the adapter and the server if the controller runs, else stop everything."""
    arg = context.launch_configurations
    name, namespace = arg["controller_name"], arg["namespace"]
    if returncode != 0:
        rclpy.logging.get_logger("real.launch").fatal(
            f"controller {name} did not start (spawner exit code {returncode}, see above): stopping"
        )
        return [Shutdown(reason=f"controller {name} did not start")]
    share = get_package_share_directory(PACKAGE)
    adapter_config = arg["adapter_config"] or os.path.join(share, "config", "real.yaml")
    adapter = Node(
        package=PACKAGE,
        executable="real_state_adapter",
        namespace=namespace,
        output="screen",
        emulate_tty=True,
        parameters=[
            adapter_config,
            {
                "gripper_type": arg["gripper_type"],
                "controller_name": name,
                "source_topic": arg["gripper_joint_states"],
            },
        ],
        on_exit=Shutdown(reason="real_state_adapter ended"),  # without it the server has no robot
    )
    remappings = []
    if arg["gripper_type"] == "Franka":
        remappings.append(("franka_gripper/gripper_action", "serl_gripper/gripper_action"))
    elif arg["gripper_type"] == "Robotiq":
        remappings.append(("franka_gripper/gripper_action", arg["gripper_action"]))
    server_node = Node(
        package=PACKAGE,
        executable="franka_server",
        namespace=namespace,
        output="screen",
        emulate_tty=True,
        parameters=[server_params],
        remappings=remappings,
    )
    actions = [adapter, server_node]
    if arg["rviz"].lower() == "true":
        actions.append(rviz_node(namespace, server_params["base_frame"]))
    return actions


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [DeclareLaunchArgument(n, default_value=d, description=t) for n, (d, t) in ARGUMENTS.items()]
        + [OpaqueFunction(function=_launch)]
    )
