"""real_state_adapter: franka_ros2's robot state and the serl compliance as the contract's, end to end.

What cannot exist here, and its stand-ins (each said again where it is used):
- franka_msgs (part of franka_ros2, not in the bundled ROS 2 and not buildable from it): the robot state is
  fed to the adapter's state node as objects shaped like franka_msgs/msg/FrankaRobotState of franka_ros2
  v3.4 (fields measured_joint_state, o_t_ee, f_t_ee, k_f_ext_hat_k, robot_mode, current_errors, as in
  franka_msgs/msg/FrankaRobotState.msg), built from real sensor_msgs / geometry_msgs messages and called
  on the node's subscription callback instead of arriving over DDS.
- the Cartesian controller (crisp_controllers' CartesianController, a ros2_control plugin that needs the
  arm's hardware) and ros2_control's controller_manager: a plain rclpy node with crisp's parameter names
  and ranges, and a controller_manager/switch_controller service of the real controller_manager_msgs type.
Everything else is real: the values come from the running simulator (an independent model of the arm:
MuJoCo's), the adapter's nodes publish real topics, and the real franka_server_ros2 (server.launch.py)
answers HTTP from them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
import requests
import yaml
from builtin_interfaces.msg import Time
from control_msgs.action import GripperCommand
from controller_manager_msgs.msg import ControllerState
from controller_manager_msgs.srv import ListControllers, SwitchController
from example_configs import RAM_INSERTION
from geometry_msgs.msg import PoseStamped, WrenchStamped
from harness import Process
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from isaac_franka_bridge.real import compliance, gripper, kinematics, state
from isaac_franka_bridge.real.adapter_node import (
    Calls,
    FrankaHandBridge,
    GripperStateRelay,
    ImpedanceNode,
    StateNode,
    Status,
    wait_for_callbacks,
)

from conftest import STARTUP_TIMEOUT, free_port, wait_until

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------------- pure parts
def test_the_arm_model_is_mujocos_panda():
    """The DH model (kinematics.py) against MuJoCo's Panda of gym-hil, an independent description of the arm:
    every joint frame and the end effector's Jacobian agree at random configurations."""
    package = importlib.util.find_spec("gym_hil")  # installed for its assets only: not imported
    path = Path(package.submodule_search_locations[0]) / "assets" / "panda.xml"
    model = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(model)
    rng = np.random.default_rng(12)
    f_t_ee = np.eye(4)
    f_t_ee[:3, :3] = Rotation.from_euler("z", -np.pi / 4).as_matrix()  # the Franka hand's EE frame ...
    f_t_ee[:3, 3] = (0.0, 0.0, 0.1034)  # ... at its fingertip centre
    dofs = [model.jnt_dofadr[model.joint(f"joint{i}").id] for i in range(1, 8)]
    for _ in range(20):
        q = rng.uniform(-2.5, 2.5, 7)
        data.qpos[[model.jnt_qposadr[model.joint(f"joint{i}").id] for i in range(1, 8)]] = q
        mujoco.mj_forward(model, data)

        def pose(body: str) -> np.ndarray:
            matrix = np.eye(4)
            matrix[:3, :3] = data.xmat[model.body(body).id].reshape(3, 3)
            matrix[:3, 3] = data.xpos[model.body(body).id]
            return matrix

        base = pose("link0")
        frames = kinematics.joint_frames(q)
        for i in range(7):
            np.testing.assert_allclose(np.linalg.inv(base) @ pose(f"link{i + 1}"), frames[i], atol=1e-9)
        ee = base @ kinematics.end_effector_pose(q, f_t_ee)
        jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        mujoco.mj_jac(model, data, jacp, jacr, ee[:3, 3], model.body("link7").id)
        jacobian = kinematics.zero_jacobian(q, f_t_ee)
        np.testing.assert_allclose(base[:3, :3].T @ jacp[:, dofs], jacobian[:3], atol=1e-9)
        np.testing.assert_allclose(base[:3, :3].T @ jacr[:, dofs], jacobian[3:], atol=1e-9)


def franka_robot_state(q, dq, tau, o_t_ee: np.ndarray, f_t_ee: np.ndarray, wrench, stamp=(12, 500), mode=2, **errors):
    """An object shaped like franka_msgs/msg/FrankaRobotState (franka_ros2 v3.4; see the module docstring),
    the fields the adapter reads, made of real ROS messages."""

    def pose_stamped(matrix: np.ndarray, frame: str) -> PoseStamped:
        msg = PoseStamped()
        msg.header.frame_id = frame
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in matrix[:3, 3])
        o.x, o.y, o.z, o.w = (float(v) for v in Rotation.from_matrix(matrix[:3, :3]).as_quat())
        return msg

    joints = JointState(name=[f"fr3_joint{i}" for i in range(1, 8)])
    joints.position, joints.velocity, joints.effort = (list(map(float, v)) for v in (q, dq, tau))
    k_f = WrenchStamped()
    k_f.header.frame_id = "fr3_EE"
    w = k_f.wrench
    w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z = (float(v) for v in wrench)
    flags = {name: False for name in ("joint_position_limits_violation", "cartesian_reflex", "joint_reflex")}
    flags.update(errors)
    return SimpleNamespace(
        header=Header(stamp=Time(sec=stamp[0], nanosec=stamp[1])),
        measured_joint_state=joints,
        o_t_ee=pose_stamped(o_t_ee, "fr3_link0"),
        f_t_ee=pose_stamped(f_t_ee, "fr3_link8"),
        k_f_ext_hat_k=k_f,
        robot_mode=mode,
        current_errors=SimpleNamespace(**flags),
    )


def test_a_malformed_state_is_refused_with_the_reason():
    q = np.zeros(7)
    good = franka_robot_state(q, q, q, kinematics.end_effector_pose(q, np.eye(4)), np.eye(4), np.zeros(6))
    assert state.convert(good).kinematics_error < 1e-9
    short = franka_robot_state(np.zeros(6), q, q, np.eye(4), np.eye(4), np.zeros(6))
    with pytest.raises(ValueError, match="position has 6 values, expected 7"):
        state.convert(short)
    nan = franka_robot_state(q, q * np.nan, q, np.eye(4), np.eye(4), np.zeros(6))
    with pytest.raises(ValueError, match="non-finite"):
        state.convert(nan)
    zero_quat = franka_robot_state(q, q, q, np.eye(4), np.eye(4), np.zeros(6))
    zero_quat.f_t_ee.pose.orientation.w = 0.0
    with pytest.raises(ValueError, match="zero or non-finite quaternion"):
        state.convert(zero_quat)
    # a wrong F_T_EE (or another arm) shows as a distance between the model's and the robot's O_T_EE
    shifted = np.eye(4)
    shifted[2, 3] = 0.02
    assert abs(state.convert(franka_robot_state(q, q, q, np.eye(4), shifted, np.zeros(6))).kinematics_error) > 0.3


def test_robot_modes_read_as_the_simulator_says_them():
    assert state.robot_mode_text(2) == "impedance"
    assert state.robot_mode_text(2, controller_active=False) == "move"
    assert state.robot_mode_text(1) == "idle"
    assert state.robot_mode_text(2, joint_reset=True) == "joint_reset"
    errors = SimpleNamespace(cartesian_reflex=True, joint_reflex=False, power_limit_violation=True)
    assert state.robot_mode_text(4, errors) == "reflex: cartesian_reflex, power_limit_violation"
    assert state.robot_mode_text(5) == "user_stopped"


def test_the_compliance_map_of_config_real_yaml_is_the_default_and_sound():
    config = yaml.safe_load((ROOT / "config" / "real.yaml").read_text())
    entries = config["/**/cartesian_impedance_controller"]["ros__parameters"]["compliance_map"]
    assert tuple(entries) == compliance.CRISP_MAP
    mapping = compliance.parse_map(entries)
    assert compliance.unmapped(mapping) == ("joint1_nullspace_stiffness", "translational_Ki", "rotational_Ki")
    # ram_insertion's asymmetric clips: crisp has one symmetric clip per axis, the tighter one is sent
    values = compliance.controller_values(RAM_INSERTION.compliance_param, mapping)
    assert values["task.error_clip.x"] == 0.002 and values["task.k_pos_y"] == 2000
    with pytest.raises(ValueError, match="no serl compliance parameter"):
        compliance.parse_map(["translational_stifness=task.k_pos_x"])
    with pytest.raises(ValueError, match="is not serl_name=controller_parameter"):
        compliance.parse_map(["translational_stiffness"])
    # the controller's parameters exist in its config file, so the map names real ones
    controller = yaml.safe_load((ROOT / "config" / "real_crisp_controller.yaml").read_text())

    def lookup(name: str):
        node = controller
        for part in name.split("."):
            node = node[part]
        return node

    for targets in mapping.values():
        for target in targets:
            assert isinstance(lookup(target), float), target


def test_franka_hand_goals_become_franka_gripper_moves_and_grasps():
    """The original's open (0.09 m, wider than the hand) is clamped; a goal with force is a grasp with the
    original's 1 m epsilon; goals arriving while one runs: only the newest is kept."""
    opened = gripper.hand_command(0.045, 0.0, speed=0.1)
    assert (opened.kind, opened.width) == ("move", 0.08)
    grasp = gripper.hand_command(0.005, 130.0, speed=0.1)
    assert (grasp.kind, grasp.width, grasp.force, grasp.epsilon_inner, grasp.epsilon_outer) == (
        "grasp",
        0.01,
        130.0,
        1.0,
        1.0,
    )
    with pytest.raises(ValueError):
        gripper.hand_command(float("nan"), 0.0, speed=0.1)
    latest = gripper.LatestCommand()
    replaced = [latest.put(gripper.hand_command(position, 0.0, speed=0.1))[1] for position in (0.01, 0.02, 0.03)]
    assert replaced == [None, 1, 2]
    number, command = latest.take(timeout=0.1)
    assert number == 3 and command.width == pytest.approx(0.06)
    assert latest.take(timeout=0.05) is None


# ---------------------------------------------------------------------------------------------- end to end
class SimTick:
    """The simulator's state topics, as a ROS user sees them: the newest tick that all four carry, the
    Jacobian, and the flange-to-end-effector transform of /tf_static."""

    def __init__(self, node: Node) -> None:
        self.messages: dict[str, dict[tuple[int, int], object]] = {}
        self.jacobian: np.ndarray | None = None
        self.f_t_ee: np.ndarray | None = None
        self._subscriptions = []
        for topic, kind in (
            ("joint_states", JointState),
            ("O_T_EE", PoseStamped),
            ("K_F_ext_hat_K", WrenchStamped),
        ):
            self.messages[topic] = {}
            self._subscriptions.append(
                node.create_subscription(kind, f"/franka_state_controller/{topic}", self._keep(topic), 50)
            )
        self._subscriptions.append(
            node.create_subscription(
                Float64MultiArray, "/cartesian_impedance_controller/franka_jacobian", self._on_jacobian, 10
            )
        )
        latched = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._subscriptions.append(node.create_subscription(TFMessage, "/tf_static", self._on_static, latched))
        self._node = node

    def _keep(self, topic: str):
        def callback(msg) -> None:
            stamps = self.messages[topic]
            stamps[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = msg
            while len(stamps) > 200:
                stamps.pop(next(iter(stamps)))

        return callback

    def _on_jacobian(self, msg) -> None:
        self.jacobian = np.array(msg.data).reshape((6, 7), order="F")

    def _on_static(self, msg) -> None:
        for t in msg.transforms:
            if t.header.frame_id == "panda_link8" and t.child_frame_id == "panda_EE":
                matrix = np.eye(4)
                r, p = t.transform.rotation, t.transform.translation
                matrix[:3, :3] = Rotation.from_quat([r.x, r.y, r.z, r.w]).as_matrix()
                matrix[:3, 3] = (p.x, p.y, p.z)
                self.f_t_ee = matrix

    def tick(self):
        def common():
            stamps = set.intersection(*(set(m) for m in self.messages.values()))
            return max(stamps) if stamps else None

        assert wait_until(lambda: common() is not None and self.jacobian is not None and self.f_t_ee is not None, 10)
        stamp = common()
        return {topic: msgs[stamp] for topic, msgs in self.messages.items()}


@contextlib.contextmanager
def spun(*nodes: Node, threads: int = 4):
    executor = MultiThreadedExecutor(num_threads=threads)
    for node in nodes:
        executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        yield executor
    finally:
        executor.shutdown()
        thread.join(5.0)  # out of its wait before the nodes are destroyed
        wait_for_callbacks(executor)


@contextlib.contextmanager
def server_of(namespace: str, *args: str):
    """The real franka_server_ros2 (server.launch.py) of the robot in `namespace`; yields its URL."""
    port = free_port()
    process = Process(
        [
            "ros2",
            "launch",
            "isaac_franka_bridge",
            "server.launch.py",
            f"namespace:={namespace}",
            f"port:={port}",
            *args,
        ],
        "server-launch",
    )
    url = f"http://127.0.0.1:{port}/"

    def up() -> bool:
        if not process.alive():
            return True
        try:
            requests.get(url + "health", timeout=1.0)
        except requests.ConnectionError:
            return False
        return True

    try:
        assert wait_until(up, STARTUP_TIMEOUT, 0.25) and process.alive(), process.output()
        yield url, process
    finally:
        process.stop()


def test_the_simulators_state_through_the_adapter_is_what_the_server_answers(robot, ros):
    """The simulator's own state (q, dq, O_T_EE, the wrench, and its flange-to-EE transform) dressed as a
    FrankaRobotState goes through the adapter's state node into the contract's topics of another namespace;
    the real server there answers /getstate with the simulator's pose, joints and wrench, and with a
    Jacobian and a velocity the adapter computed from q and dq alone that match the simulator's (MuJoCo's)."""
    # nodes of the test's own: entities of the session's probe node must not be created and destroyed while
    # its executor waits on them
    watcher = Node("test_adapter_watch")
    sim = SimTick(watcher)
    with spun(watcher):
        robot.ok("pose", {"arr": (robot.pose() + np.r_[0.03, -0.02, 0.02, 0, 0, 0, 0]).tolist()})  # off singularities
        # at rest (two ticks 0.5 s apart within 1e-5 rad), so that the Jacobian message, which carries no stamp,
        # belongs to the tick read with it (a loaded machine slows the simulation down)
        deadline, previous = time.monotonic() + 60.0, None
        while time.monotonic() < deadline:
            q_now = np.array(sim.tick()["joint_states"].position[:7])
            if previous is not None and np.abs(q_now - previous).max() < 1e-5:
                break
            previous = q_now
            time.sleep(0.5)
        tick = sim.tick()
        jacobian_sim, f_t_ee = sim.jacobian, sim.f_t_ee
    watcher.destroy_node()
    joints, pose, wrench_msg = tick["joint_states"], tick["O_T_EE"], tick["K_F_ext_hat_K"]
    q, dq = np.array(joints.position[:7]), np.array(joints.velocity[:7])
    o_t_ee = state.pose_matrix(pose.pose)
    w = wrench_msg.wrench
    wrench = [w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z]
    sim_state = robot.state()
    # the arm model reproduces the simulator's end effector from q and its F_T_EE
    message = franka_robot_state(q, dq, joints.effort[:7], o_t_ee, f_t_ee, wrench)
    converted = state.convert(message)
    assert converted.kinematics_error < 1e-6
    np.testing.assert_allclose(converted.jacobian, jacobian_sim, atol=2e-5)

    status = Status()
    node = StateNode(status, None, namespace="adapted")  # no subscription: franka_msgs cannot exist here
    relay = GripperStateRelay(namespace="adapted")
    driver = Node("test_robotiq_driver")  # stands for the Robotiq driver's joint_state_broadcaster
    source = driver.create_publisher(JointState, "/adapted/joint_states", 10)
    stop = threading.Event()

    def robot_stream():
        """As franka_robot_state_broadcaster (decimated by the adapter) and a Robotiq driver would publish."""
        n = 0
        while not stop.is_set():
            n += 1
            message.header.stamp.sec, message.header.stamp.nanosec = 100 + n // 100, (n % 100) * 10_000_000
            node.on_robot_state(message)
            gripper_joints = JointState(name=["robotiq_85_right_knuckle_joint", "robotiq_85_left_knuckle_joint"])
            gripper_joints.position = [0.1, 0.4]
            source.publish(gripper_joints)
            time.sleep(0.01)

    publisher = threading.Thread(target=robot_stream, daemon=True)
    try:
        with spun(node, relay, driver), server_of("adapted", "gripper_type:=Robotiq") as (url, _):
            publisher.start()
            assert wait_until(lambda: requests.post(url + "getstate", timeout=5).status_code == 200, 20), requests.post(
                url + "getstate", timeout=5
            ).text
            answer = requests.post(url + "getstate", timeout=5).json()
            np.testing.assert_allclose(answer["pose"][:3], sim_state["pose"][:3], atol=2e-3)
            np.testing.assert_allclose(answer["pose"], [*o_t_ee[:3, 3], *converted.quaternion], atol=1e-9)
            np.testing.assert_allclose(answer["q"], q, atol=1e-12)
            np.testing.assert_allclose(answer["dq"], dq, atol=1e-12)
            np.testing.assert_allclose(answer["force"] + answer["torque"], wrench, atol=1e-12)
            np.testing.assert_allclose(answer["jacobian"], jacobian_sim, atol=2e-5)
            np.testing.assert_allclose(answer["vel"], jacobian_sim @ dq, atol=1e-4)
            # the Robotiq knuckle at 0.4 of 0.8 rad: gPO 127.5 of 255, the original's 1 - gPO/255
            gripper_pos = lambda: requests.post(url + "get_gripper", timeout=5).json()["gripper"]  # noqa: E731
            assert wait_until(lambda: gripper_pos() == pytest.approx(0.5), 5.0), gripper_pos()
            health = lambda: requests.get(url + "health", timeout=5).json()  # noqa: E731
            # robot_mode comes on a latched topic of its own, which a loaded machine may deliver after the state
            assert wait_until(lambda: health()["robot_mode"] == "impedance", 5.0), health()
            message.robot_mode = 4
            message.current_errors.cartesian_reflex = True
            assert wait_until(
                lambda: requests.get(url + "health", timeout=5).json()["robot_mode"] == "reflex: cartesian_reflex", 5
            )
    finally:
        stop.set()
        publisher.join(2.0)
        for each in (node, relay, driver):
            each.destroy_node()


class StandInController(Node):
    """Test double of crisp_controllers' CartesianController (a ros2_control plugin, needs the arm): its
    parameter names and ranges (those of its cartesian_impedance_controller.yaml), and its target topic."""

    def __init__(self, namespace: str) -> None:
        super().__init__("crisp_cartesian_impedance_controller", namespace=namespace)
        for axis in ("x", "y", "z"):
            for kind, bound in (("k_pos", 5000.0), ("d_pos", 5000.0), ("k_rot", 5000.0), ("d_rot", 5000.0)):
                self._double(f"task.{kind}_{axis}", 1.0, 0.0, bound)
        for axis in ("x", "y", "z", "rx", "ry", "rz"):
            self.declare_parameter(f"task.error_clip.{axis}", 0.1)  # crisp declares no bounds for these
        self._double("nullspace.stiffness", 1.0, 0.0, 500.0)
        self.targets: list[PoseStamped] = []
        self.create_subscription(PoseStamped, "target_pose", self.targets.append, 10)

    def _double(self, name: str, value: float, low: float, high: float) -> None:
        self.declare_parameter(
            name, value, ParameterDescriptor(floating_point_range=[FloatingPointRange(from_value=low, to_value=high)])
        )


class StandInControllerManager(Node):
    """Test double of ros2_control's controller_manager (needs the arm's hardware): the two services the
    adapter calls, of the real controller_manager_msgs types."""

    def __init__(self, namespace: str, controller: str) -> None:
        super().__init__("controller_manager", namespace=namespace)
        self.controller, self.active, self.requests = controller, True, []
        self.create_service(SwitchController, "controller_manager/switch_controller", self._switch)
        self.create_service(ListControllers, "controller_manager/list_controllers", self._list)

    def _switch(self, request, response):
        self.requests.append(request)
        if self.controller in request.activate_controllers:
            self.active = True
        if self.controller in request.deactivate_controllers:
            self.active = False
        response.ok = True
        return response

    def _list(self, request, response):
        response.controller = [ControllerState(name=self.controller, state="active" if self.active else "inactive")]
        return response


def test_compliance_pose_targets_and_switching_reach_the_controller(ros):  # ros: the session's ROS is up
    """/update_param with ram_insertion's sets, /pose and /stopimp through the real server reach the
    controller's own parameters, target topic and controller_manager through the adapter."""
    namespace = "adapted_control"
    controller = StandInController(namespace)
    manager = StandInControllerManager(namespace, controller.get_name())
    calls = Calls(f"/{namespace}")
    status = Status()
    impedance = ImpedanceNode(status, calls, namespace=namespace)
    user = Node("test_ros_user")  # a ROS user calling the adapter's services
    client = user.create_client(Trigger, f"/{namespace}/cartesian_impedance_controller/start")
    try:
        nodes = (controller, manager, impedance, user)
        with spun(*nodes, threads=6), server_of(namespace, "gripper_type:=None") as (url, _):
            value = lambda name: controller.get_parameter(name).value  # noqa: E731
            impedance.keep_applying(0.5)  # as at start-up: the serl values reach the controller (its own are 1.0)
            assert wait_until(lambda: value("task.k_pos_z") == 2000.0, 10.0), "the compliance never arrived"
            assert value("task.k_pos_z") == 2000.0 and value("task.d_rot_x") == 7.0
            assert value("nullspace.stiffness") == 0.2 and value("task.error_clip.rx") == 0.05
            response = requests.post(url + "update_param", json=RAM_INSERTION.compliance_param, timeout=10)
            assert response.status_code == 200, response.text
            assert value("task.error_clip.x") == 0.002  # min(clip_x 0.0075, clip_neg_x 0.002)
            assert value("task.error_clip.z") == 0.005 and value("task.error_clip.ry") == 0.025
            # precision_param: the server clamps the 0.5 rad clips into serl's range (0.1), the adapter forwards
            response = requests.post(url + "update_param", json=RAM_INSERTION.precision_param, timeout=10)
            assert response.status_code == 200, response.text
            assert value("task.error_clip.rz") == 0.1 and value("task.k_rot_x") == 250.0
            # above the controller's own range (crisp: 5000 N/m; serl: 6000): clamped by the adapter, said in its log
            response = requests.post(url + "update_param", json={"translational_stiffness": 6000}, timeout=10)
            assert response.status_code == 200 and value("task.k_pos_x") == 5000.0
            # a pose: the controller gets it on its own topic, quaternion normalised
            before = len(controller.targets)
            body = {"arr": [0.5, 0.0, 0.3, 0.0, 2.0, 0.0, 0.0]}
            assert requests.post(url + "pose", json=body, timeout=10).text == "Moved"
            assert wait_until(lambda: len(controller.targets) > before, 5.0)
            orientation = controller.targets[-1].pose.orientation
            assert (orientation.x, orientation.y, orientation.z, orientation.w) == (0.0, 1.0, 0.0, 0.0)
            # /stopimp switches it off through controller_manager; the adapter's start switches it on again
            assert requests.post(url + "stopimp", timeout=10).text == "Stopped impedance"
            assert manager.requests[-1].deactivate_controllers == [controller.get_name()] and not manager.active
            assert client.wait_for_service(5.0)
            future = client.call_async(Trigger.Request())
            assert wait_until(future.done, 10.0) and future.result().success, future.result()
            assert manager.active and status.controller_active
    finally:
        for node in (impedance, manager, controller, user):
            node.destroy_node()
        calls.shutdown()


def test_the_adapter_executable_needs_franka_msgs_and_says_so():
    """Without franka_ros2 sourced (as here) the adapter stops at once with one FATAL line."""
    result = subprocess.run(
        ["ros2", "run", "isaac_franka_bridge", "real_state_adapter"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    fatal = [line for line in output.splitlines() if "FATAL" in line]
    assert len(fatal) == 1 and "franka_msgs is not importable" in fatal[0], output
    assert "Traceback" not in output


def test_franka_hand_goals_reach_franka_gripper_as_few_moves_and_grasps(ros):  # ros: the session's ROS is up
    """The real server's /close_gripper and /open_gripper for the Franka hand (a stream of GripperCommand goals
    at the original's speed) through the adapter's bridge, then a burst of goals straight to the bridge.
    franka_gripper's move and grasp actions (franka_msgs, and a hand) cannot exist here: the bridge's call to
    them is replaced by a recorder that takes 1 s per command, as a slow finger motion does; the action types
    handed to the bridge only let it be built."""
    namespace = "adapted_hand"
    calls = Calls(f"/{namespace}")
    standin_types = SimpleNamespace(Move=GripperCommand, Grasp=GripperCommand)  # never sent: _send is replaced
    bridge = FrankaHandBridge(calls, standin_types, namespace=namespace)
    sent: list[gripper.HandCommand] = []

    def franka_gripper(command: gripper.HandCommand) -> tuple[bool, str]:
        sent.append(command)
        time.sleep(1.0)
        return True, ""

    bridge._send = franka_gripper
    hand = Node("test_franka_gripper_state")  # stands for franka_gripper's joint_states
    fingers = hand.create_publisher(JointState, f"/{namespace}/franka_gripper/joint_states", 10)
    user = Calls(f"/{namespace}_user")  # a ROS client of the bridge's action, on a thread of its own
    action = ActionClient(user.node, GripperCommand, f"/{namespace}/serl_gripper/gripper_action")
    stop = threading.Event()

    def hand_state():  # both fingers open (0.04 m each), as franka_gripper publishes them
        while not stop.is_set():
            fingers.publish(JointState(name=["fr3_finger_joint1", "fr3_finger_joint2"], position=[0.04, 0.04]))
            time.sleep(0.02)

    publisher = threading.Thread(target=hand_state, daemon=True)
    publisher.start()
    arguments = ("gripper_type:=Franka", "gripper_action:=serl_gripper/gripper_action")
    try:
        with spun(bridge, hand), server_of(namespace, *arguments) as (url, _):
            assert wait_until(lambda: fingers.get_subscription_count() > 0, 10.0)
            time.sleep(0.5)  # the server has the fingers' state: it ramps its goals at the original's speed
            assert requests.post(url + "close_gripper", timeout=10).text == "Closed"
            assert wait_until(lambda: sent and sent[-1].width == pytest.approx(0.01), 10.0), sent
            last = sent[-1]
            assert (last.kind, last.speed, last.force, last.epsilon_inner, last.epsilon_outer) == (
                "grasp",
                0.1,
                130.0,
                1.0,
                1.0,
            )
            goals = bridge.commands.newest  # the goals of the server's stream for this close
            assert len(sent) < goals, (goals, sent)  # not one franka_gripper command per goal
            assert requests.post(url + "open_gripper", timeout=10).text == "Opened"
            assert wait_until(lambda: sent[-1].kind == "move" and sent[-1].width == 0.08, 10.0), sent
            assert max(c.width for c in sent) <= 0.08  # the original's 0.09 m open, clamped to the hand
            # a burst of six goals once the hand is idle: two commands, the one taken first and the newest
            before = -1
            while before != len(sent):  # no new command for 1.5 s: idle
                before = len(sent)
                time.sleep(1.5)

            async def burst():
                handles = []
                for width in (0.07, 0.06, 0.05, 0.04, 0.03, 0.02):
                    goal = GripperCommand.Goal()
                    goal.command.position, goal.command.max_effort = width / 2, 0.0
                    handles.append(await action.send_goal_async(goal))
                return [(await h.get_result_async()).result.reached_goal for h in handles]

            assert action.wait_for_server(timeout_sec=5.0)
            reached = user.run(burst, 20.0, "the burst of gripper goals")
            burst_commands = sent[before:]
            assert len(burst_commands) == 2 and burst_commands[-1].width == pytest.approx(0.02), burst_commands
            assert reached[-1] and sum(reached) == 2, reached  # the four replaced goals end aborted
    finally:
        stop.set()
        publisher.join(2.0)
        hand.destroy_node()
        bridge.destroy_node()
        user.shutdown()
        calls.shutdown()
