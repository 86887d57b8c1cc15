"""Who may drive the robot, end to end: the server's optional access token and client list.

The robot is the session's simulation (sim.launch.py, with its own open server on 127.0.0.1). A second
franka_server_ros2, started by server.launch.py, serves the same robot on 127.0.0.2 with access control:
the two-host setup of docs/two_hosts.md (a server facing the training host) on two loopback addresses.
Requests go over real HTTP; whether anything moved is read on the robot's own ROS topic
(cartesian_impedance_controller/equilibrium_pose, which every /pose publishes) and from its state.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import hil_serl
import numpy as np
import pytest
import requests
from geometry_msgs.msg import PoseStamped
from harness import Process
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from franka_server_ros2.access import AccessRule, binding_notice

from conftest import STARTUP_TIMEOUT, free_port, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "virtual_realsense"))
from virtual_realsense._server import ServerUnavailable, SimServer  # noqa: E402

TOKEN = secrets.token_urlsafe(24)
WRONG_TOKEN = TOKEN[:-1] + ("y" if TOKEN.endswith("x") else "x")  # differs in its last character only
GUARDED_HOST = "127.0.0.2"


def serving(url: str, process: Process) -> bool:
    """Whether the server at `url` answers HTTP at all (any status), or its process has ended."""
    if not process.alive():
        return True
    try:
        requests.get(url + "health", timeout=1.0)
    except requests.ConnectionError:
        return False
    return True


def answers(status: Callable[[], int]) -> bool:
    """Whether a state route answers 200 within a few seconds (a server just started has no state yet: 503)."""
    return wait_until(lambda: status() == 200, 15.0, 0.2)


@contextlib.contextmanager
def server_launch(*args: str, env: dict[str, str] | None = None):
    """server.launch.py with `args` (host and port included), up and answering; yields the Process."""
    host = next(a.split(":=", 1)[1] for a in args if a.startswith("host:="))
    port = next(a.split(":=", 1)[1] for a in args if a.startswith("port:="))
    process = Process(["ros2", "launch", "isaac_franka_bridge", "server.launch.py", *args], "server-launch", env=env)
    try:
        url = f"http://{'127.0.0.1' if host == '0.0.0.0' else host}:{port}/"
        assert wait_until(lambda: serving(url, process), STARTUP_TIMEOUT, 0.25), process.output()
        assert process.alive(), process.output()
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def guarded(session_sim):
    """(url without the token, Process): a server of the session's robot on 127.0.0.2 that needs TOKEN."""
    session_sim.ensure()
    port = free_port()
    with server_launch(f"host:={GUARDED_HOST}", f"port:={port}", f"access_token:={TOKEN}") as process:
        url = f"http://{GUARDED_HOST}:{port}/"
        # its first state (a test run alone met the 503 of a server that has none yet)
        assert answers(lambda: requests.post(f"{url}{TOKEN}/getstate", timeout=5.0).status_code), process.output()
        yield url, process


class PoseCommands:
    """Counts the equilibrium poses the robot's controller is sent (by any server)."""

    def __init__(self, node) -> None:
        self.node = node
        self.count = 0
        self._lock = threading.Lock()
        node.create_subscription(PoseStamped, "/cartesian_impedance_controller/equilibrium_pose", self._on_pose, 10)

    def wait_for_publishers(self, count: int) -> bool:
        """Until `count` servers' publishers of the target are discovered (and a moment for their side)."""
        topic = "/cartesian_impedance_controller/equilibrium_pose"
        found = wait_until(lambda: self.node.count_publishers(topic) >= count, 20.0)
        time.sleep(0.5)
        return found

    def _on_pose(self, msg) -> None:
        with self._lock:
            self.count += 1


@pytest.fixture()
def commands(ros):
    """A watch on the robot's equilibrium_pose, on a node of its own (entities of the session's probe node
    must not be created and destroyed while its executor waits on them)."""
    node = Node("test_access_watch")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    watch = PoseCommands(node)
    assert watch.wait_for_publishers(1)  # the simulation's own server
    yield watch
    executor.shutdown()
    thread.join(5.0)
    node.destroy_node()


def test_without_the_token_nothing_is_served_and_nothing_moves(guarded, sim, commands):
    url, process = guarded
    robot, _ = sim
    assert commands.wait_for_publishers(2)  # and the guarded server's
    before = robot.pose()

    def seen() -> bool:  # a pose with the token, where the arm already is, until the watch receives one
        requests.post(f"{url}{TOKEN}/pose", json={"arr": before.tolist()}, timeout=5.0)
        return wait_until(lambda: commands.count > 0, 0.5)

    assert wait_until(seen, 30.0, 0.0), "the watch never received this server's poses"  # so its silence counts
    time.sleep(0.3)
    commands.count = 0
    target = (before + np.r_[0.05, 0.0, 0.0, 0, 0, 0, 0]).tolist()
    attempts = [
        ("POST", "pose", {"arr": target}, {}),
        ("POST", "getstate", None, {}),
        ("POST", "clearerr", None, {}),
        ("POST", "update_param", {"translational_stiffness": 10.0}, {}),
        ("POST", "close_gripper", None, {}),
        ("GET", "health", None, {}),
        ("GET", "cameras", None, {}),
        ("POST", f"{WRONG_TOKEN}/pose", {"arr": target}, {}),
        ("POST", f"pose/{TOKEN}", {"arr": target}, {}),  # not the first path segment
        ("POST", "pose", {"arr": target}, {"Authorization": f"Bearer {TOKEN[:-1]}"}),
        ("POST", "pose", {"arr": target}, {"Authorization": TOKEN}),  # not a Bearer credential
    ]
    for method, route, body, headers in attempts:
        response = requests.request(method, url + route, json=body, headers=headers, timeout=5.0)
        assert response.status_code == 401, (route, response.status_code, response.text)
        assert "access token" in response.json()["error"]
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    time.sleep(1.0)
    assert commands.count == 0, "a refused /pose reached the controller"
    assert np.linalg.norm(robot.pose()[:3] - before[:3]) < 0.002
    # one log line for this client, not one per request (a client retrying at 10 Hz must not flood the log)
    refusals = [line for line in process.output().splitlines() if "refused a" in line]
    assert len(refusals) == 1, refusals
    assert TOKEN not in process.output()
    # the same requests with the token in the URL move the arm (as the stock env: clear errors, then the pose)
    assert requests.post(f"{url}{TOKEN}/clearerr", timeout=5.0).text == "Clear"
    assert requests.post(f"{url}{TOKEN}/pose", json={"arr": target}, timeout=5.0).text == "Moved"
    assert wait_until(lambda: commands.count >= 1, 5.0)
    assert wait_until(lambda: robot.pose()[0] > before[0] + 0.03, 30.0), robot.pose()  # a loaded machine: slow
    robot.ok("pose", {"arr": before.tolist()})


@hil_serl.may_build
def test_the_stock_client_runs_unaltered_with_the_token_in_its_server_url(guarded, sim):
    """HIL-SERL posts to SERVER_URL + "getstate": SERVER_URL = http://host:port/<token>/ carries the token. HIL-SERL's
    own FrankaEnv (tests/hil_serl.Remote) with ram_insertion's config, its cameras left out (none here)."""
    url, _ = guarded
    spec = {
        "env": "franka_env.envs.franka_env:FrankaEnv",
        "config": "experiments.ram_insertion.config:EnvConfig",
        "server": f"{url}{TOKEN}/",
        "cameras": False,
    }
    with hil_serl.Remote(spec, [f"{url}{TOKEN}/"]) as env:
        env.reset()
        start = np.array(env.get("currpos"))
        for _ in range(5):
            env.step(np.r_[0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
        moved = np.array(env.get("currpos"))
    assert moved[0] - start[0] > 0.005, (start, moved)  # it moved along +x, every request through the guard


def test_a_bearer_token_and_the_camera_client_url(guarded):
    """Clients that can send headers use `Authorization: Bearer`; the camera client (virtual_realsense) takes
    the token in FRANKA_SIM_URL's path, as the stock env's SERVER_URL does."""
    url, _ = guarded
    response = requests.post(url + "getstate", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5.0)
    assert response.status_code == 200 and len(response.json()["q"]) == 7
    assert SimServer(f"{url}{TOKEN}").cameras() == []  # the session's simulation runs without cameras
    with pytest.raises(ServerUnavailable, match="401"):
        SimServer(url).cameras()


def post_from(source: str, host: str, port: int, route: str, body: dict | None = None) -> tuple[int, str]:
    """POST /route (with a JSON body) to host:port from the local address `source`."""
    connection = http.client.HTTPConnection(host, port, timeout=5.0, source_address=(source, 0))
    try:
        data = json.dumps(body) if body is not None else None
        connection.request("POST", f"/{route}", body=data, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_only_allowed_clients_are_served(sim, commands):
    robot, _ = sim
    port = free_port()
    with server_launch(f"host:={GUARDED_HOST}", f"port:={port}", "allowed_clients:=127.0.0.3, 10.9.0.0/16"):
        status, body = post_from("127.0.0.1", GUARDED_HOST, port, "getstate")
        assert status == 403 and "127.0.0.1 is not in allowed_clients" in json.loads(body)["error"]
        assert post_from("127.0.0.1", GUARDED_HOST, port, "clearerr")[0] == 403
        before = robot.pose()
        target = (before + np.r_[0.05, 0.0, 0.0, 0, 0, 0, 0]).tolist()
        assert post_from("127.0.0.1", GUARDED_HOST, port, "pose", {"arr": target})[0] == 403
        assert answers(lambda: post_from("127.0.0.3", GUARDED_HOST, port, "getstate")[0])
        assert len(json.loads(post_from("127.0.0.3", GUARDED_HOST, port, "getstate")[1])["pose"]) == 7
        time.sleep(1.0)
        assert commands.count == 0 and np.linalg.norm(robot.pose()[:3] - before[:3]) < 0.002


def test_binding_beyond_loopback_is_said_at_start_up(session_sim):
    """host:=0.0.0.0 is an explicit choice and the server's log says who can reach it. Here it is made
    with a client list, so that the test opens no unprotected robot port on the machine's network; the
    warning of an unprotected one is checked on the function that writes it."""
    session_sim.ensure()
    port = free_port()
    with server_launch("host:=0.0.0.0", f"port:={port}", "allowed_clients:=127.0.0.1") as process:
        assert wait_until(lambda: "serving beyond this machine" in process.output(), 10.0), process.output()
        assert "only clients in allowed_clients ['127.0.0.1/32'] are served" in process.output()
        assert answers(lambda: requests.post(f"http://127.0.0.1:{port}/getstate", timeout=5.0).status_code)
    level, line = binding_notice("0.0.0.0", 5000, AccessRule())
    assert level == "warn" and "anyone who can reach port 5000 can move the robot" in line
    assert binding_notice("127.0.0.2", 5000, AccessRule()) is None  # loopback, as the original: nothing to say


def test_the_token_can_come_from_the_environment_and_never_reaches_the_log(session_sim):
    session_sim.ensure()
    port, token = free_port(), secrets.token_urlsafe(18)
    url = f"http://{GUARDED_HOST}:{port}/"
    with server_launch(f"host:={GUARDED_HOST}", f"port:={port}", env={"FRANKA_SERVER_TOKEN": token}) as process:
        assert requests.post(url + "getstate", timeout=5.0).status_code == 401
        assert answers(lambda: requests.post(f"{url}{token}/getstate", timeout=5.0).status_code)
        assert requests.post(f"{url}{token}", timeout=5.0).status_code == 404  # the prefix alone: no route
        assert wait_until(lambda: "$FRANKA_SERVER_TOKEN" in process.output(), 5.0), process.output()
        assert token not in process.output()


@pytest.mark.parametrize(
    "argument, reason",
    [
        ("access_token:=tooshort", "at least 16 are needed"),
        ("access_token:=a/token/with/slashes/in/it", "may only hold letters"),
        ("allowed_clients:=10.0.0.1,lab-pc", "'lab-pc' is not an IP address or network"),
    ],
)
def test_bad_access_arguments_stop_the_launch_with_one_fatal_line(argument, reason):
    result = subprocess.run(
        ["ros2", "launch", "isaac_franka_bridge", "server.launch.py", argument, f"port:={free_port()}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    fatal = [line for line in output.splitlines() if "FATAL" in line]
    assert len(fatal) == 1 and reason in fatal[0], output
    assert "Traceback" not in output and "process started" not in output


def test_a_bad_token_stops_the_server_node_itself_with_one_fatal_line():
    """The node checks its own parameters too (a launch of another package, or ros2 run)."""
    started = time.monotonic()
    result = subprocess.run(
        ["ros2", "run", "isaac_franka_bridge", "franka_server", "--ros-args", "-p", f"port:={free_port()}"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FRANKA_SERVER_TOKEN": "short"},
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "$FRANKA_SERVER_TOKEN is 5 characters long" in output and "Traceback" not in output, output
    assert time.monotonic() - started < 30
