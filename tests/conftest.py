"""Fixtures that start the real product: sim.launch.py (sim bridge + franka_server_ros2) over real
ROS 2, real HTTP and real MuJoCo physics, in an isolated ROS domain on a free port.

Nothing here is a test double: the tests talk HTTP to the server and ROS 2 to the sim, as users do.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import threading
from collections import deque

import numpy as np
import pytest
import requests

# One ROS domain per test session, on loopback only: never talks to a user's running simulation.
os.environ["ROS_DOMAIN_ID"] = str(random.Random(os.getpid()).randint(20, 99))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("MUJOCO_GL", "egl")

import rclpy  # noqa: E402  (after the domain is chosen)
from geometry_msgs.msg import PoseStamped, WrenchStamped  # noqa: E402
from harness import STARTUP_TIMEOUT, Process, answering, free_port, launch_sim, wait_until  # noqa: E402, F401
from launch_testing.pytest.hooks import LaunchTestItem, LaunchTestModule, find_launch_test_entrypoint  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter, parameter_value_to_python  # noqa: E402
from rclpy.parameter_client import AsyncParameterClient  # noqa: E402

from isaac_franka_bridge.controller import DEFAULT_COMPLIANCE  # noqa: E402


class Robot:
    """The HTTP side, as HIL-SERL's FrankaEnv sees it."""

    def __init__(self, url: str, gripper_type: str = "Robotiq") -> None:
        self.url = url
        self.gripper_type = gripper_type  # as launched (sim.launch.py's default: Robotiq)
        self.session = requests.Session()

    def post(self, route: str, json=None, data=None, timeout: float = 45.0) -> requests.Response:
        return self.session.post(self.url + route, json=json, data=data, timeout=timeout)

    def ok(self, route: str, json=None) -> str:
        response = self.post(route, json=json)
        assert response.status_code == 200, f"/{route}: {response.status_code} {response.text}"
        return response.text

    def state(self) -> dict:
        response = self.session.post(self.url + "getstate", timeout=5.0)
        assert response.status_code == 200, f"/getstate: {response.status_code} {response.text}"
        return response.json()

    def pose(self) -> np.ndarray:
        return np.array(self.state()["pose"])


_other_domains = itertools.count(1)


def other_domain() -> dict[str, str]:
    """Environment for another, independent robot: a ROS domain no robot of this session is on yet."""
    return {"ROS_DOMAIN_ID": str((int(os.environ["ROS_DOMAIN_ID"]) + next(_other_domains)) % 100)}


@contextlib.contextmanager
def isolated_launch(robots: list[Robot], port: int | None, *launch_args: str):
    """sim.launch.py on a ROS domain of its own, with a ROS node of the test on that domain, once every
    robot's server answers. Yields (node, process)."""
    if _session_sim is not None:
        _session_sim.pause()  # this world gets the machine to itself (two cores run one world well)
    env = other_domain()
    process = launch_sim(port, *launch_args, env=env)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(env["ROS_DOMAIN_ID"]))
    node = Node("test_probe_other_domain", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    try:
        up = lambda: all(answering(r.url, r.session) for r in robots) or not process.alive()  # noqa: E731
        assert wait_until(up, STARTUP_TIMEOUT, 0.25), process.output()
        assert process.alive(), process.output()
        yield node, process
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        process.stop()


@contextlib.contextmanager
def second_robot(*launch_args: str):
    """Another one-robot sim.launch.py on its own ROS domain and port. Yields (Robot, Node, Process)."""
    port = free_port()
    gripper = next((a.split(":=", 1)[1] for a in launch_args if a.startswith("gripper_type:=")), "Robotiq")
    robot = Robot(f"http://127.0.0.1:{port}/", gripper)
    with isolated_launch([robot], port, *launch_args) as (node, process):
        yield robot, node, process


class SessionSim:
    """The session's sim.launch.py (one arm, no cameras) on one port and ROS domain. Started when a test
    needs it; paused (stopped) while a test runs a world of its own, so that on a 2-core machine one
    simulation at a time has the CPU, then started again on the same port for the next test that needs it."""

    def __init__(self) -> None:
        self.robot = Robot(f"http://127.0.0.1:{free_port()}/")
        self.process: Process | None = None

    def ensure(self) -> tuple[Robot, Process]:
        """(Robot, Process) of the running simulation, started if it is not."""
        if self.process is None or not self.process.alive():
            port = int(self.robot.url.rsplit(":", 1)[1].strip("/"))
            self.process = launch_sim(port)
            up = lambda: answering(self.robot.url, self.robot.session) or not self.process.alive()  # noqa: E731
            if not wait_until(up, STARTUP_TIMEOUT, 0.25) or not self.process.alive():
                output = self.process.output()
                self.pause()
                pytest.fail(f"sim.launch.py did not come up:\n{output}")
        return self.robot, self.process

    def pause(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


_session_sim: SessionSim | None = None


# Launch tests (tests/test_*_launch.py: a `@pytest.mark.launch_test` generate_test_description, unittest classes)
# are collected as ament's pytest collects them, into launch_testing's own pytest items, which run them with
# launch_testing's runner. launch_testing's plugin, which does this in a ROS 2 workspace, is off (pytest.ini): its
# hook still takes pytest 7's `path` argument, which pytest >= 8 refuses; the next two hooks do its work here.
def pytest_addoption(parser):
    parser.addoption("--launch-args", action="append", nargs="*", default=[], help="name:=value for launch tests")


def pytest_pycollect_makemodule(module_path, parent):
    if not module_path.match("test_*_launch.py") or "def generate_test_description" not in module_path.read_text():
        return None
    marks = getattr(find_launch_test_entrypoint(module_path), "pytestmark", [])
    if any(mark.name == "launch_test" for mark in marks):
        return LaunchTestModule.from_parent(parent, path=module_path)
    return None


def pytest_runtest_setup(item):
    if isinstance(item, LaunchTestItem) and _session_sim is not None:
        _session_sim.pause()  # a launch test gets the machine to itself, as isolated_launch's worlds do


@pytest.fixture(scope="session")
def session_sim():
    global _session_sim
    _session_sim = SessionSim()
    yield _session_sim
    _session_sim.pause()
    _session_sim = None


@pytest.fixture()
def sim(session_sim) -> tuple[Robot, Process]:
    """The session's sim.launch.py, running: (Robot, Process)."""
    return session_sim.ensure()


@pytest.fixture()
def robot(sim) -> Robot:
    """The robot at its reset configuration with the default compliance, for one test."""
    robot, process = sim
    assert process.alive(), process.output()
    robot.ok("update_param", DEFAULT_COMPLIANCE)
    robot.ok("clearerr")  # a test that failed in a reflex must not leave the next one stuck
    robot.ok("jointreset")
    return robot


class RosProbe(Node):
    """A plain rclpy node in the test process: what a ROS user (or rqt) sees of the robot."""

    def __init__(self) -> None:
        super().__init__("test_probe")
        self.poses: deque[tuple[float, np.ndarray]] = deque(maxlen=20000)
        self.create_subscription(PoseStamped, "/franka_state_controller/O_T_EE", self._on_pose, 100)
        self.wrench_publisher = self.create_publisher(WrenchStamped, "/sim/external_wrench", 10)
        self.pose_publisher = self.create_publisher(PoseStamped, "/cartesian_impedance_controller/equilibrium_pose", 10)
        self._parameter_clients: dict[str, AsyncParameterClient] = {}

    def _on_pose(self, msg: PoseStamped) -> None:
        p, o = msg.pose.position, msg.pose.orientation
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        if self.poses and stamp < self.poses[-1][0]:
            self.poses.clear()  # a new simulation (its clock starts again): the last one's poses are gone
        self.poses.append((stamp, np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w])))

    def latest(self) -> tuple[float, np.ndarray]:
        assert wait_until(lambda: len(self.poses) > 0, 10.0), "no O_T_EE received"
        return self.poses[-1]

    def remote_parameter(self, node: str, name: str):
        if node not in self._parameter_clients:
            self._parameter_clients[node] = AsyncParameterClient(self, node)
        client = self._parameter_clients[node]
        assert client.wait_for_services(timeout_sec=10.0), f"{node} has no parameter services"
        future = client.get_parameters([name])
        assert wait_until(future.done, 10.0), f"no answer from {node}"
        return parameter_value_to_python(future.result().values[0])

    def set_remote_parameters(self, node: str, **values) -> None:
        results = self.try_remote_parameters(node, **values)
        assert all(r.successful for r in results), results

    def try_remote_parameters(self, node: str, **values) -> list:
        """Set parameters of another node as `ros2 param set` does: its SetParametersResult for each."""
        if node not in self._parameter_clients:
            self._parameter_clients[node] = AsyncParameterClient(self, node)
        client = self._parameter_clients[node]
        assert client.wait_for_services(timeout_sec=10.0), f"{node} has no parameter services"
        as_double = lambda v: [float(x) for x in v] if isinstance(v, (list, tuple)) else float(v)  # noqa: E731
        future = client.set_parameters([Parameter(k, value=as_double(v)) for k, v in values.items()])
        assert wait_until(future.done, 10.0), f"no answer from {node}"
        return future.result().results

    def command(self, pose: np.ndarray) -> None:
        """An equilibrium pose straight on the controller's topic, as a ROS user would send it."""
        assert wait_until(lambda: self.pose_publisher.get_subscription_count() > 0, 10.0)
        msg = PoseStamped()
        msg.header.frame_id = "panda_link0"
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z, o.x, o.y, o.z, o.w = (float(v) for v in pose)
        self.pose_publisher.publish(msg)

    def speeds_since(self, stamp: float) -> np.ndarray:
        """End-effector speeds [m/s] between consecutive O_T_EE messages stamped after `stamp`."""
        samples = [(t, p[:3]) for t, p in list(self.poses) if t >= stamp]
        times = np.array([t for t, _ in samples])
        positions = np.array([p for _, p in samples])
        return np.linalg.norm(np.diff(positions, axis=0), axis=1) / np.diff(times)

    def push(self, force: list[float], torque: list[float] = (0.0, 0.0, 0.0)) -> None:
        msg = WrenchStamped()
        msg.header.frame_id = "panda_link0"
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(v) for v in force)
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = (float(v) for v in torque)
        self.wrench_publisher.publish(msg)


@pytest.fixture(scope="session")
def probe():
    """The test's ROS node on the session simulation's domain, for the whole session."""
    rclpy.init()
    node = RosProbe()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    yield node
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()


@pytest.fixture()
def ros(sim, probe) -> RosProbe:
    """The probe, once the running simulation has discovered it, with only that simulation's poses (the session's
    simulation may have been restarted since the last test: the probe may not have heard from the new one yet)."""
    assert wait_until(lambda: probe.wrench_publisher.get_subscription_count() > 0, 20.0)
    probe.poses.clear()
    probe.latest()
    return probe
