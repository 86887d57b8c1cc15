"""real.launch.py and server.launch.py: what they start, and that they stop clearly when they cannot.

franka_ros2, crisp_controllers and rviz2 are not installed here (they need a ROS 2 built with them and,
for franka_ros2, the arm). To see what real.launch.py starts where they are, these tests use a stand-in
package index (a directory on AMENT_PREFIX_PATH, made by the `standin` fixture) that holds only what the
launch file looks up: the packages' index entries, a franka_bringup/launch/franka.launch.py that records
the arguments it is given and starts nothing, and a controller_manager `spawner` that records its command
line and exits. Everything of this package that the launch starts is the real thing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from ament_index_python.packages import get_package_share_directory
from harness import Process
from launch.actions import Shutdown
from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions

from launch import LaunchContext

from conftest import free_port, wait_until

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "isaac_franka_bridge"
STANDIN_PACKAGES = (
    "franka_bringup",
    "franka_msgs",
    "franka_robot_state_broadcaster",
    "franka_gripper",
    "crisp_controllers",
    "controller_manager",
    "rviz2",
)
# stand-in of franka_bringup/launch/franka.launch.py (franka_ros2 >= 2.0 declares these arguments): it records
# what it is given in $STANDIN_RECORD/franka.launch.json and starts nothing (no arm here)
STANDIN_BRINGUP = """
import json, os
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction

NAMES = ("robot_ip", "robot_type", "arm_id", "namespace", "load_gripper", "use_fake_hardware")

def record(context):
    given = {name: context.launch_configurations.get(name) for name in NAMES}
    with open(os.path.join(os.environ["STANDIN_RECORD"], "franka.launch.json"), "w") as f:
        json.dump(given, f)
    return [LogInfo(msg="[stand-in franka.launch.py] " + json.dumps(given))]

def generate_launch_description():
    arguments = [DeclareLaunchArgument(n, default_value="") for n in NAMES]
    return LaunchDescription(arguments + [OpaqueFunction(function=record)])
"""
# stand-in of controller_manager's spawner: records its command line, exits with $STANDIN_SPAWNER_RC (0)
STANDIN_SPAWNER = """#!/bin/sh
printf '%s\\n' "$@" > "$STANDIN_RECORD/spawner.args"
echo "[stand-in spawner] $*"
exit "${STANDIN_SPAWNER_RC:-0}"
"""


@pytest.fixture()
def standin(tmp_path, monkeypatch):
    """The stand-in package index first on AMENT_PREFIX_PATH (this process and the processes it starts);
    yields the directory where the stand-ins record what they were given."""
    prefix, record = tmp_path / "standin_prefix", tmp_path / "record"
    record.mkdir()
    index = prefix / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    for package in STANDIN_PACKAGES:
        (index / package).write_text("")
        (prefix / "share" / package).mkdir(parents=True)
    (prefix / "share" / "franka_bringup" / "launch").mkdir()
    (prefix / "share" / "franka_bringup" / "launch" / "franka.launch.py").write_text(STANDIN_BRINGUP)
    spawner = prefix / "lib" / "controller_manager" / "spawner"
    spawner.parent.mkdir(parents=True)
    spawner.write_text(STANDIN_SPAWNER)
    spawner.chmod(spawner.stat().st_mode | stat.S_IXUSR)
    rviz = prefix / "lib" / "rviz2" / "rviz2"  # resolved by the launch, never run here
    rviz.parent.mkdir(parents=True)
    rviz.write_text("#!/bin/sh\nexit 0\n")
    rviz.chmod(rviz.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{prefix}{os.pathsep}{os.environ['AMENT_PREFIX_PATH']}")
    monkeypatch.setenv("STANDIN_RECORD", str(record))
    return record


def launch_module(name: str):
    """A launch file of this package as installed (what `ros2 launch` runs), imported as a module."""
    path = Path(get_package_share_directory(PACKAGE)) / "launch" / name
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def context_of(module, **arguments: str) -> LaunchContext:
    """A launch context with the file's declared defaults and `arguments` given, as `ros2 launch` makes one."""
    context = LaunchContext()
    context.launch_configurations.update({n: d for n, (d, _) in module.ARGUMENTS.items()})
    context.launch_configurations.update(arguments)
    return context


def command_line(node, context: LaunchContext) -> list[str]:
    """The command line the launch would run for `node` (package executable, arguments, --ros-args ...)."""
    node._perform_substitutions(context)  # launch_ros expands names, parameters and remappings here
    context.extend_locals({"ros_specific_arguments": {"ns": f"__ns:={node.expanded_node_namespace}"}})
    return [perform_substitutions(context, part) for part in node.cmd]


def after(line: list[str], flag: str) -> list[str]:
    return [line[i + 1] for i, part in enumerate(line[:-1]) if part == flag]


def parameters(line: list[str]) -> dict:
    """All parameters a command line passes in its --params-file files, merged in order."""
    merged = {}
    for path in after(line, "--params-file"):
        for values in yaml.safe_load(Path(path).read_text()).values():
            merged.update(values["ros__parameters"])
    return merged


def node_parameters(line: list[str], node: str) -> dict:
    """The parameters of one node of a multi-node process: the `/**` and the `/**/<node>` keys."""
    merged = {}
    for path in after(line, "--params-file"):
        for key, values in yaml.safe_load(Path(path).read_text()).items():
            if key in ("/**", f"/**/{node}"):
                merged.update(values["ros__parameters"])
    return merged


# ---------------------------------------------------------------------------------------------- without franka_ros2
def run_launch(*args: str, env: dict | None = None) -> tuple[int, str]:
    result = subprocess.run(
        ["ros2", "launch", PACKAGE, *args], capture_output=True, text=True, timeout=90, env=env or dict(os.environ)
    )
    return result.returncode, result.stdout + result.stderr


def test_without_franka_ros2_real_launch_stops_with_one_fatal_line():
    code, output = run_launch("real.launch.py", "robot_ip:=172.16.0.2")
    assert code == 1, output
    fatal = [line for line in output.splitlines() if "FATAL" in line]
    assert len(fatal) == 1, output
    for what in ("franka_bringup", "franka_msgs", "crisp_controllers", "docs/real_robot.md", "sim.launch.py"):
        assert what in fatal[0], fatal[0]
    assert "Traceback" not in output and "process started" not in output


@pytest.mark.parametrize(
    "arguments, reason",
    [
        ((), "robot_ip:= is required"),
        (("robot_ip:=10.0.0.2", "robot_type:=ur5"), "robot_type:=ur5 must be one of fr3, fp3, fer"),
        (("robot_ip:=10.0.0.2", "gripper_type:=robotiq"), "gripper_type:=robotiq must be one of"),
        (("robot_ip:=10.0.0.2", "port:=http"), "port:=http is not an integer"),
        (("robot_ip:=10.0.0.2", "access_token:=abc"), "at least 16 are needed"),
    ],
)
def test_a_bad_real_launch_argument_is_one_fatal_line(arguments, reason):
    code, output = run_launch("real.launch.py", *arguments)
    fatal = [line for line in output.splitlines() if "FATAL" in line]
    assert code == 1 and len(fatal) == 1 and reason in fatal[0], output
    assert "Traceback" not in output


# ---------------------------------------------------------------------------------------------- with a stand-in index
def test_real_launch_lists_franka_bringup_the_controller_and_its_parameters(standin):
    real = launch_module("real.launch.py")
    context = context_of(real, robot_ip="172.16.0.2", namespace="left", port="5005")
    bringup, spawner, handler = real._launch(context)
    # 1. franka_ros2's bringup, the stand-in's file (first on AMENT_PREFIX_PATH), with the arm's arguments
    source = bringup.launch_description_source
    source.get_launch_description(context)  # the stand-in file loads as a launch description
    standin_prefix = Path(os.environ["AMENT_PREFIX_PATH"].split(os.pathsep)[0])
    assert source.location == str(standin_prefix / "share" / "franka_bringup" / "launch" / "franka.launch.py")
    text = lambda value: perform_substitutions(context, normalize_to_list_of_substitutions(value))  # noqa: E731
    given = {text(k): text(v) for k, v in bringup.launch_arguments}
    assert given == {
        "robot_ip": "172.16.0.2",
        "robot_type": "fr3",
        "arm_id": "fr3",
        "namespace": "left",
        "load_gripper": "true",  # gripper_type Franka: franka_gripper runs the hand
        "use_fake_hardware": "false",
    }
    # 2. the controller: spawned by controller_manager's spawner in the robot's namespace, with crisp's type and
    # the serl values of config/real_crisp_controller.yaml, plus the arm's joints and frames
    line = command_line(spawner, context)
    assert line[0].endswith("lib/controller_manager/spawner") and spawner.expanded_node_namespace == "/left"
    assert line[1] == "crisp_cartesian_impedance_controller" and "--controller-manager-timeout" in line
    params_file = yaml.safe_load(Path(after(line, "--param-file")[0]).read_text())
    controller = params_file["/**/crisp_cartesian_impedance_controller"]["ros__parameters"]
    assert controller["type"] == "crisp_controllers/CartesianController"
    assert controller["joints"] == [f"fr3_joint{i}" for i in range(1, 8)]
    assert (controller["base_frame"], controller["end_effector_frame"]) == ("fr3_link0", "fr3_hand_tcp")
    assert controller["task"]["k_pos_x"] == 2000.0 and controller["task"]["error_clip"]["rx"] == 0.05
    # 3. the adapter and the server start only once the spawner has ended well
    assert type(handler.event_handler).__name__ == "OnProcessExit"


def test_once_the_controller_runs_the_adapter_and_the_same_server_start(standin):
    real = launch_module("real.launch.py")
    server_launch = launch_module("server.launch.py")
    arguments = {"robot_ip": "172.16.0.2", "namespace": "left", "port": "5005", "host": "127.0.0.2", "rviz": "true"}
    context = context_of(real, **arguments)
    server_params = real._check(context.launch_configurations, server_launch)
    adapter, server, rviz = real.after_controller(0, context, server_params, server_launch)
    line = command_line(adapter, context)
    assert line[0].endswith("lib/isaac_franka_bridge/real_state_adapter") and adapter.expanded_node_namespace == "/left"
    assert node_parameters(line, "franka_state_controller")["robot_state_topic"] == (
        "franka_robot_state_broadcaster/robot_state"
    )
    impedance = node_parameters(line, "cartesian_impedance_controller")
    assert impedance["controller_name"] == "crisp_cartesian_impedance_controller"
    assert impedance["controller_target_topic"] == "target_pose"
    assert node_parameters(line, "serl_gripper")["gripper_type"] == "Franka"
    line = command_line(server, context)
    assert line[0].endswith("lib/isaac_franka_bridge/franka_server") and server.expanded_node_namespace == "/left"
    assert parameters(line) == {
        "host": "127.0.0.2",
        "port": 5005,
        "gripper_type": "Franka",
        "robotiq_open_position": 0,  # a Robotiq opens fully (docs/differences.md)
        "controller": "impedance",
        "base_frame": "fr3_link0",
        "cameras_config": "",
        "access_token": "",
        "use_sim_time": False,
    }
    # the Franka hand's goals go through the adapter's bridge to franka_gripper's move and grasp
    assert server.expanded_remapping_rules == [("franka_gripper/gripper_action", "serl_gripper/gripper_action")]
    line = command_line(rviz, context)
    assert line[0].endswith("lib/rviz2/rviz2") and rviz.expanded_node_namespace == "/left"
    assert after(line, "-d")[0].endswith("config/rviz/franka.rviz") and after(line, "-f") == ["fr3_link0"]


def test_a_robotiq_goes_through_its_own_driver(standin):
    real = launch_module("real.launch.py")
    server_launch = launch_module("server.launch.py")
    context = context_of(real, robot_ip="172.16.0.2", gripper_type="Robotiq", robot_type="fer")
    _, spawner, _ = real._launch(context)
    controller = yaml.safe_load(Path(after(command_line(spawner, context), "--param-file")[0]).read_text())
    frames = controller["/**/crisp_cartesian_impedance_controller"]["ros__parameters"]
    assert frames["end_effector_frame"] == "fer_link8" and frames["joints"][0] == "fer_joint1"
    server_params = real._check(context.launch_configurations, server_launch)
    adapter, server = real.after_controller(0, context, server_params, server_launch)
    assert server.expanded_remapping_rules is None  # not expanded yet
    command_line(server, context)
    assert server.expanded_remapping_rules == [
        ("franka_gripper/gripper_action", "robotiq_gripper_controller/gripper_cmd")
    ]
    relay = node_parameters(command_line(adapter, context), "serl_gripper")
    assert relay["gripper_type"] == "Robotiq" and relay["source_topic"] == "joint_states"


def test_a_controller_that_does_not_start_stops_everything(standin, capfd):
    real = launch_module("real.launch.py")
    context = context_of(real, robot_ip="172.16.0.2")
    actions = real.after_controller(1, context, {}, None)
    assert len(actions) == 1 and isinstance(actions[0], Shutdown)
    assert (
        "controller crisp_cartesian_impedance_controller did not start (spawner exit code 1" in capfd.readouterr().err
    )


def test_real_launch_runs_in_its_order_with_the_standins(standin):
    """The real run, stand-ins and all: franka's bringup gets its arguments, the spawner runs, then the real
    adapter starts, and as franka_msgs cannot be imported here it stops the launch with its FATAL line."""
    port = free_port()
    process = Process(
        ["ros2", "launch", PACKAGE, "real.launch.py", "robot_ip:=172.16.0.2", f"port:={port}"], "real-launch"
    )
    try:
        assert wait_until(lambda: not process.alive(), 90.0), process.output()
        output = process.output()
    finally:
        process.stop()
    assert json.loads((standin / "franka.launch.json").read_text())["robot_ip"] == "172.16.0.2"
    spawned = (standin / "spawner.args").read_text().split()
    assert spawned[0] == "crisp_cartesian_impedance_controller" and "--param-file" in spawned
    order = [
        output.index("[stand-in franka.launch.py]"),
        output.index("[stand-in spawner]"),
        output.index("franka_msgs is not importable"),
    ]
    assert order == sorted(order), output
    assert "real_state_adapter ended" in output or "shutting down" in output.lower(), output
    assert len([line for line in output.splitlines() if "FATAL" in line]) == 1, output


def test_a_failing_spawner_stops_before_the_adapter(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_SPAWNER_RC", "1")
    code, output = run_launch("real.launch.py", "robot_ip:=172.16.0.2", f"port:={free_port()}")
    assert "controller crisp_cartesian_impedance_controller did not start (spawner exit code 1" in output, output
    assert "real_state_adapter" not in output and "franka_server" not in output, output


# ---------------------------------------------------------------------------------------------- docs
def documented_arguments(doc: Path, heading: str) -> dict[str, str]:
    """`name` -> `default` of the table under `heading` in a doc ("| `name` | `default` | what |")."""
    text = doc.read_text()
    start = text.index(heading)
    rows = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("#"):
            break
        match = re.match(r"\|\s*`([a-z_]+)`\s*\|\s*`([^`]*)`\s*\|", line)
        if match:
            rows[match.group(1)] = "" if match.group(2) == "''" else match.group(2)
    return rows


@pytest.mark.parametrize(
    "launch_file, doc, heading",
    [
        ("real.launch.py", "docs/real_robot.md", "### Arguments of real.launch.py"),
        ("server.launch.py", "docs/two_hosts.md", "### Arguments of server.launch.py"),
        ("sim.launch.py", "docs/tasks.md", "### Arguments of sim.launch.py"),
    ],
)
def test_every_launch_argument_is_documented_and_every_documented_one_exists(launch_file, doc, heading):
    module = launch_module(launch_file)
    documented = documented_arguments(ROOT / doc, heading)
    assert documented == {name: default for name, (default, _) in module.ARGUMENTS.items()}
