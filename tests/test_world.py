"""Two robots in one simulated world (config/tasks/dual_arm.yaml, object_handover's arms): one
physics, one /clock, one TF tree under `world`, a server per robot on its own address. Real launch,
real nodes, real HTTP, real MuJoCo. The world file is the shipped one with free ports and a small
camera per robot."""

from __future__ import annotations

import os
import tempfile
import threading
import time

import hil_serl
import numpy as np
import pytest
import requests
from harness import world_on_free_ports
from scipy.spatial.transform import Rotation
from test_gripper import move, open_fully, settled_opening
from tf2_msgs.msg import TFMessage

from isaac_franka_bridge.controller import DEFAULT_COMPLIANCE
from isaac_franka_bridge.world import DEFAULT_CUBE

from conftest import Robot, isolated_launch, wait_until

CAMERA = """cameras:
  {name}:
    serial_number: "{serial}"
    width: 64
    height: 48
    fps: 1
    body: attachment
    pos: [-0.05, 0.015, 0.0]
    quat: [0.0, 0.7071068, -0.7071068, 0.0]
    fovy: 42.5
    sees_arm: false
"""
CAMERAS = {"left": ("left_wrist", "111"), "right": ("right_wrist", "222")}


@pytest.fixture(scope="module")
def world():
    """The dual-arm world on free ports: yields ({namespace: Robot}, probe node, process, spec)."""
    directory = tempfile.mkdtemp(prefix="dual-world-")
    for namespace, (name, serial) in CAMERAS.items():
        with open(os.path.join(directory, f"{namespace}_cameras.yaml"), "w") as f:
            f.write(CAMERA.format(name=name, serial=serial))
    path, spec = world_on_free_ports("dual_arm", directory, {n: f"{n}_cameras.yaml" for n in CAMERAS})
    clients = {r.namespace: Robot(f"http://{r.host}:{r.port}/", r.gripper_type) for r in spec.robots}
    # state topics at 100 Hz, not 500: this world runs beside the session's simulation on two cores, and
    # what is tested here does not depend on the rate (make bench measures two robots at 500 Hz)
    arguments = (f"world:={path}", "cameras_config:=", "state_publish_rate:=100.0")
    with isolated_launch(list(clients.values()), None, *arguments) as (node, process):
        yield clients, node, process, spec


@pytest.fixture()
def arms(world):
    clients, node, process, spec = world
    assert process.alive(), process.output()
    for robot in clients.values():
        robot.ok("update_param", DEFAULT_COMPLIANCE)
        robot.ok("clearerr")
    threads = [threading.Thread(target=r.ok, args=("jointreset",)) for r in clients.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return clients, node, spec


class TfRecorder:
    """The latest transform of every (parent, child) seen on /tf and /tf_static."""

    def __init__(self, node) -> None:
        self.transforms: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
        from rclpy.qos import DurabilityPolicy, QoSProfile

        latched = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._subscriptions = [
            node.create_subscription(TFMessage, "/tf", self._on, 100),
            node.create_subscription(TFMessage, "/tf_static", self._on, latched),
        ]
        self.node = node

    def _on(self, msg: TFMessage) -> None:
        for t in msg.transforms:
            p, r = t.transform.translation, t.transform.rotation
            self.transforms[t.child_frame_id] = (
                t.header.frame_id,
                np.array([p.x, p.y, p.z]),
                np.array([r.x, r.y, r.z, r.w]),
            )

    def world_position(self, frame: str) -> np.ndarray:
        """Position of `frame` in `world`, composed along its parents."""
        from scipy.spatial.transform import Rotation

        position, rotation = np.zeros(3), Rotation.identity()
        while frame != "world":
            parent, p, q = self.transforms[frame]
            position = Rotation.from_quat(q).apply(position) + p
            rotation = Rotation.from_quat(q) * rotation
            frame = parent
        return position

    def world_quat(self, frame: str) -> np.ndarray:
        """(x, y, z, w) of a frame whose parent is `world`."""
        parent, _, quat = self.transforms[frame]
        assert parent == "world", parent
        return quat

    def close(self) -> None:
        for s in self._subscriptions:
            self.node.destroy_subscription(s)


@pytest.fixture()
def tf(arms, world):
    _, node, process, _ = world  # `arms` has reset the arms
    recorder = TfRecorder(node)
    wanted = {"left/panda_link0", "right/panda_link0", "cube"}
    # a bound, not a clock: the objects' frames come with the task's evaluation, which skips a tick when the
    # simulation thread does not answer within 1 s (TaskPublisher.evaluate); 20 s timed out once in a full suite
    assert wait_until(lambda: wanted <= set(recorder.transforms), 60.0), (
        f"frames seen: {sorted(recorder.transforms)}; simulator alive: {process.alive()}"
    )
    yield recorder
    recorder.close()


def test_each_server_answers_on_its_own_address_with_its_own_cameras(world):
    clients, _, _, spec = world
    assert [r.host for r in spec.robots] == ["127.0.0.1", "127.0.0.2"]  # object_handover's servers
    for robot in spec.robots:
        client = clients[robot.namespace]
        listed = requests.get(client.url + "cameras", timeout=5).json()["cameras"]
        assert [(c["name"], c["serial"]) for c in listed] == [CAMERAS[robot.namespace]], listed
        assert client.ok("getstate")
        assert client.session.get(client.url + "health", timeout=5).status_code == 200


def test_a_pose_sent_to_one_server_moves_only_that_robot(arms):
    clients, _, _ = arms
    for mover, other in (("left", "right"), ("right", "left")):
        time.sleep(1.5)  # the arm moved last settles on its target
        before = clients[other].pose()
        start = clients[mover].pose()
        target = start[:3] + np.array([0.0, 0.0, 0.06])
        move(clients[mover], target, start[3:])
        assert np.linalg.norm(clients[other].pose()[:3] - before[:3]) < 0.001, f"{other} moved with {mover}"


def test_one_clock_and_one_tf_tree_with_both_robots_under_world(arms, tf):
    clients, node, spec = arms
    assert wait_until(lambda: node.count_publishers("/clock") == 1, 5.0), node.count_publishers("/clock")
    for robot in spec.robots:
        parent, position, _ = tf.transforms[robot.base_frame]
        assert parent == "world"
        np.testing.assert_allclose(position, robot.base_position, atol=1e-9)
        assert tf.transforms[f"{robot.prefix}panda_link7"][0] == robot.base_frame
        # the TF tree and the robot's own O_T_EE agree on where its end effector is in the world
        assert wait_until(lambda p=robot.prefix: f"{p}panda_EE" in tf.transforms, 5.0)
        ee_world = tf.world_position(f"{robot.prefix}panda_EE")
        ee_base = clients[robot.namespace].pose()[:3]
        np.testing.assert_allclose(ee_world, ee_base + np.array(robot.base_position), atol=0.002)
    assert tf.transforms["cube"][0] == "world"


def test_each_server_is_one_node_and_reads_its_state_through_a_hidden_reader(arms):
    """A server takes its robot's state topics on demand through a hidden node (no callback per message):
    `ros2 node list` shows one franka_server per namespace, and the state topics of each namespace go to
    that namespace's reader."""
    _, node, spec = arms
    names = node.get_node_names_and_namespaces()
    for robot in spec.robots:
        namespace = "/" + robot.namespace
        assert names.count(("franka_server", namespace)) == 1, names
        assert ("_franka_server_state", namespace) in names, names  # hidden: `ros2 node list` leaves it out
        for topic in ("franka_state_controller/joint_states", "franka_state_controller/O_T_EE"):
            readers = node.get_subscriptions_info_by_topic(f"{namespace}/{topic}")
            assert {(r.node_name, r.node_namespace) for r in readers} >= {("_franka_server_state", namespace)}


@hil_serl.may_build
def test_two_stock_clients_step_both_arms_at_10_hz_at_once(arms):
    """HIL-SERL's FrankaEnv (tests/hil_serl.Remote), one per server, with a DefaultEnvConfig reset where its arm
    is (the default compliance, a 10 cm box around it, ram_insertion's action scale, no cameras): reset, then random
    steps at 10 Hz, at once."""
    clients, _, _ = arms
    results: dict[str, object] = {}

    def run(name: str, seed: int) -> None:
        try:
            pose = clients[name].pose()
            reset = np.concatenate([pose[:3], Rotation.from_quat(pose[3:]).as_euler("xyz")])
            values = {
                "RESET_POSE": reset.tolist(),
                "ABS_POSE_LIMIT_LOW": (reset - [0.1, 0.1, 0.1, 0.5, 0.5, 0.5]).tolist(),
                "ABS_POSE_LIMIT_HIGH": (reset + [0.1, 0.1, 0.1, 0.5, 0.5, 0.5]).tolist(),
                "ACTION_SCALE": [0.01, 0.06, 1.0],  # ram_insertion's (DefaultEnvConfig's is zero)
                "COMPLIANCE_PARAM": DEFAULT_COMPLIANCE,
                "PRECISION_PARAM": DEFAULT_COMPLIANCE,
            }
            spec = {
                "env": "franka_env.envs.franka_env:FrankaEnv",
                "config": "franka_env.envs.franka_env:DefaultEnvConfig",
                "server": clients[name].url,
                "values": values,
                "cameras": False,
            }
            rng = np.random.default_rng(seed)
            with hil_serl.Remote(spec, [clients[name].url]) as env:
                env.reset()
                start, periods = time.monotonic(), []
                for _ in range(30):
                    env.step(rng.uniform(-1.0, 1.0, 7) * [1, 1, 1, 0.2, 0.2, 0.2, 0])
                    periods.append(time.monotonic() - start)
                    start = time.monotonic()
                results[name] = (np.array(periods), np.linalg.norm(np.array(env.get("currpos"))[:3] - pose[:3]))
        except BaseException as exc:  # reported below, from the test's thread (pytest.fail included)
            results[name] = exc

    threads = [threading.Thread(target=run, args=(n, i)) for i, n in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, result in results.items():
        assert not isinstance(result, BaseException), f"{name}: {result!r}"
        periods, travelled = result
        assert np.median(periods) < 0.15, f"{name}: step periods {np.round(periods, 3)}"
        assert travelled > 0.005, f"{name} did not move under its env's actions"


def test_an_object_held_by_one_arm_is_touched_by_the_other_and_grasped_from_the_table(arms, tf):
    """The left arm (Franka hand) picks the cube and carries it between the arms, where the right
    arm (Robotiq) pushes it sideways: the push shows in the left arm's external force. The left arm
    sets it down there and the right arm picks it up: one physical world."""
    clients, _, spec = arms
    left, right = clients["left"], clients["right"]
    base = {r.namespace: np.array(r.base_position) for r in spec.robots}
    down = left.pose()[3:]
    open_fully(left)
    cube = tf.world_position("cube")
    at = lambda arm, world_point: world_point - base[arm]  # noqa: E731  (world -> the arm's base frame)
    move(left, at("left", cube + [0, 0, 0.13]), down)
    move(left, at("left", cube), down)
    assert left.ok("close_gripper") == "Closed"
    assert 0.3 < settled_opening(left) < 0.7, "the Franka hand should stop on the 4 cm cube"
    time.sleep(1.0)  # the grip is up to force before the lift (on a loaded machine the state lags)
    handover = np.array([0.55, 0.0, 0.2])
    move(left, at("left", handover + [0, 0, 0.1]), down, tolerance=0.008)
    move(left, at("left", handover), down, tolerance=0.008)
    assert np.linalg.norm(tf.world_position("cube") - handover) < 0.02, "the cube did not come along"
    # the right arm's fingers come at the held cube from its side, at its height
    free = np.linalg.norm(left.state()["force"])
    right_down = right.pose()[3:]
    move(right, at("right", handover + [0, -0.12, 0.1]), right_down, tolerance=0.008)
    move(right, at("right", handover + [0, -0.12, 0.0]), right_down, tolerance=0.008)
    right.ok("pose", {"arr": [*at("right", handover + [0, 0.02, 0.0]), *right_down]})  # through the cube
    assert wait_until(lambda: np.linalg.norm(left.state()["force"]) > free + 3.0, 5.0), (
        f"the left arm felt no push: {left.state()['force']}"
    )
    move(right, at("right", handover + [0, -0.15, 0.1]), right_down, tolerance=0.01)
    # the left arm sets the cube down between the arms and leaves
    table = np.array([handover[0], handover[1], cube[2]])
    move(left, at("left", table + [0, 0, 0.005]), down, tolerance=0.008)
    assert left.ok("open_gripper") == "Opened"
    time.sleep(0.5)
    move(left, at("left", table + [0, 0, 0.15]), down, tolerance=0.01)
    move(left, at("left", table + [0, 0.3, 0.15]), down, tolerance=0.01)  # out of the right arm's way
    placed = tf.world_position("cube")
    assert np.linalg.norm(placed[:2] - table[:2]) < 0.03, placed
    # the right arm picks it up, its jaws turned square to the cube as the left arm left it
    open_fully(right)
    yaw = Rotation.from_quat(tf.world_quat("cube")).as_euler("xyz")[2]
    turn = (yaw - DEFAULT_CUBE.rpy[2] + np.pi / 4) % (np.pi / 2) - np.pi / 4  # a cube looks alike every 90 deg
    right_down = (Rotation.from_euler("z", turn) * Rotation.from_quat(right_down)).as_quat()
    move(right, at("right", placed + [0, 0, 0.13]), right_down)
    move(right, at("right", placed), right_down)
    assert right.ok("close_gripper") == "Closed"
    assert 0.2 < settled_opening(right) < 0.85, "the Robotiq should stop on the cube"
    time.sleep(1.0)  # the grip is up to force before the lift (on a loaded machine the state lags)
    move(right, at("right", placed + [0, 0, 0.1]), right_down, tolerance=0.006)
    # carried off the table by the right arm (in full-suite runs it has slipped up to 3 cm of the 10 cm
    # lift in the Robotiq's jaws: a known issue of this grasp, noted for the handover task's tuning)
    assert tf.world_position("cube")[2] - placed[2] > 0.05, "the right arm did not lift the cube"
    right.ok("move_gripper", {"gripper_pos": 0})
    assert wait_until(lambda: tf.world_position("cube")[2] < placed[2] + 0.005, 3.0)
