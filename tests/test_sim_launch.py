"""launch_testing test of sim.launch.py, as ROS 2 packages test their launch files: the launch file under
test included in `generate_test_description()`, active tests while it runs, post-shutdown tests after.

The nodes of docs/ros_interfaces.md come up, the contract's topics and services are advertised with their
types, the robot state flows, and on shutdown (launch_testing's: SIGINT to each process) every process exits
with code 0. Default task (pick_cube), no cameras, a free port and a ROS domain of its own.

    scripts/run.sh python -m pytest tests/test_sim_launch.py             # as the suite runs it
    scripts/run.sh python -m launch_testing.launch_test tests/test_sim_launch.py   # launch_testing's CLI
"""

import os
import sys
import threading
import time
import unittest

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import pytest
import rclpy
import requests
from ament_index_python.packages import get_package_share_directory
from launch.actions import GroupAction, IncludeLaunchDescription, SetEnvironmentVariable
from launch.launch_description_sources import PythonLaunchDescriptionSource
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState

from launch import LaunchDescription

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test loads this file alone
from test_docs import CONTRACT_SERVICES, CONTRACT_TOPICS, ROOT  # noqa: E402

from conftest import STARTUP_TIMEOUT, free_port, other_domain, wait_until  # noqa: E402

# docs/ros_interfaces.md's nodes of a one-robot world without a namespace (impedance controller, a gripper),
# and the robot's server
SIM_NODES = (
    "/franka_sim",
    "/franka_control",
    "/franka_state_controller",
    "/cartesian_impedance_controller",
    "/franka_gripper",
    "/sim",
)
SERVER_NODE = "/franka_server"
LAUNCHED: dict = {}  # what generate_test_description chose: the ROS domain and the server's URL


def launch_file(name: str) -> str:
    """The installed launch file, as `ros2 launch isaac_franka_bridge <name>` finds it."""
    return os.path.join(get_package_share_directory("isaac_franka_bridge"), "launch", name)


def on_own_domain(domain_id: int, *entities) -> GroupAction:
    """`entities` with ROS_DOMAIN_ID set for the processes they start (scoped: the test process keeps its own)."""
    return GroupAction([SetEnvironmentVariable("ROS_DOMAIN_ID", str(domain_id)), *entities], scoped=True)


class RosProbe:
    """A node of the test on the launch's ROS domain, spinning in a thread of its own."""

    def __init__(self, domain_id: int) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("_launch_test_probe", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        threading.Thread(target=self.executor.spin, daemon=True).start()

    def node_names(self) -> list[str]:
        """The nodes on the domain by full name, as `ros2 node list` shows them (hidden `_name`s left out,
        this probe's own among them); a name twice when two nodes have it."""
        nodes = self.node.get_node_names_and_namespaces()
        return [f"{ns.rstrip('/')}/{name}" for name, ns in nodes if not name.startswith("_")]

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def quiet_domain(settle: float = 1.0) -> int:
    """A ROS domain of conftest.other_domain() on which no node shows up within `settle` seconds: other
    engineers' tests run simulations with these node names on this machine, on domains picked as ours are."""
    for _ in range(10):
        domain_id = int(other_domain()["ROS_DOMAIN_ID"])
        probe = RosProbe(domain_id)
        try:
            time.sleep(settle)
            if not probe.node_names():
                return domain_id
        finally:
            probe.close()
    raise RuntimeError("no quiet ROS domain found")


def describe(name: str, launched: dict, **arguments: str) -> LaunchDescription:
    """Launch file `name` with `arguments` on a quiet ROS domain of its own, its server on a free port, then
    ReadyToTest; `launched` gets the domain and the server's URL."""
    domain_id, port = quiet_domain(), free_port()
    launched.update(domain_id=domain_id, url=f"http://127.0.0.1:{port}/")
    arguments = {**arguments, "port": str(port)}
    include = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(launch_file(name)), launch_arguments=arguments.items()
    )
    return LaunchDescription([on_own_domain(domain_id, include), launch_testing.actions.ReadyToTest()])


class ProbedCase(unittest.TestCase):
    """Tests with a RosProbe (`self.ros`) on the domain of their module's launch (`launched`)."""

    launched: dict = {}

    @classmethod
    def setUpClass(cls):
        cls.ros = RosProbe(cls.launched["domain_id"])

    @classmethod
    def tearDownClass(cls):
        cls.ros.close()


@pytest.mark.launch_test
def generate_test_description():
    return describe("sim.launch.py", LAUNCHED, task="pick_cube", cameras_config="none", host="127.0.0.1")


class TestSimLaunchComesUp(ProbedCase):
    launched = LAUNCHED

    def test_the_nodes_of_the_docs_come_up(self):
        nodes = (ROOT / "docs" / "ros_interfaces.md").read_text().split("## Nodes", 1)[1].split("\n## ", 1)[0]
        assert all(f"| `{name}` |" in nodes or f"| `{name[1:]}` |" in nodes for name in SIM_NODES), nodes
        expected = {*SIM_NODES, SERVER_NODE}
        assert wait_until(lambda: expected <= set(self.ros.node_names()), STARTUP_TIMEOUT, 0.25), sorted(
            expected - set(self.ros.node_names())
        )
        assert sorted(self.ros.node_names()) == sorted(expected), "nodes of another launch on this ROS domain?"

    def test_the_contract_topics_and_services_are_there_with_their_types(self):
        node = self.ros.node

        def graph() -> dict[str, list[str]]:
            return dict(node.get_topic_names_and_types()) | dict(node.get_service_names_and_types())

        expected = CONTRACT_TOPICS | CONTRACT_SERVICES
        assert wait_until(lambda: set(expected) <= set(graph()), STARTUP_TIMEOUT, 0.25), sorted(
            set(expected) - set(graph())
        )
        found = graph()
        assert {name: found[name] for name in expected} == {name: [kind] for name, kind in expected.items()}

    def test_the_joint_states_arrive(self):
        received: list[JointState] = []
        self.ros.node.create_subscription(JointState, "/franka_state_controller/joint_states", received.append, 10)
        assert wait_until(lambda: received, STARTUP_TIMEOUT, 0.1), "no message on /franka_state_controller/joint_states"
        assert list(received[0].name) == [f"panda_joint{i}" for i in range(1, 8)], received[0]
        assert len(received[0].position) == 7, received[0]

    def test_the_server_answers(self):
        def answer() -> int | None:
            try:
                return requests.post(LAUNCHED["url"] + "getstate", timeout=2.0).status_code
            except requests.ConnectionError:
                return None

        assert wait_until(lambda: answer() == 200, STARTUP_TIMEOUT, 0.25), answer()


@launch_testing.post_shutdown_test()
class TestSimLaunchStopsCleanly(unittest.TestCase):
    def test_every_process_exited_with_code_0(self, proc_info):
        names = proc_info.process_names()
        assert sorted(name.rsplit("-", 1)[0] for name in names) == ["franka_server", "sim_bridge"], names
        launch_testing.asserts.assertExitCodes(proc_info)  # only EXIT_OK: no SIGINT exit code (130) allowed
