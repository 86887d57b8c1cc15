"""The server's rclpy node: one consistent state snapshot in, robot commands out.

A request takes the contract's state topics as DDS has kept them (no callback per message) and
assembles the newest snapshot whose stamped topics carry one control tick's header.stamp. Commands go out as the
contract's topics, services, parameters and the gripper action; nothing here knows whether a
simulator or the real robot answers.
"""

from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np
from control_msgs.action import GripperCommand
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterType
from rcl_interfaces.srv import DescribeParameters, ListParameters, SetParametersAtomically
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, String
from std_srvs.srv import Trigger

from .camera_specs import load_cameras
from .cameras import CameraFeeds
from .grippers import (
    ROBOTIQ_OPEN_POSITION,
    ROBOTIQ_PUBLISHED_OPEN_POSITION,
    GripperGoal,
    GripperModel,
    make_gripper,
)
from .ground_truth import GroundTruth
from .image_cdr import header_stamp, stamp_seconds
from .robot import RobotUnavailable, ServerSettings, StateSnapshot, TriggerResult

TOPIC_TYPES = {
    "joint_states": JointState,
    "O_T_EE": PoseStamped,
    "O_dP_EE": TwistStamped,
    "K_F_ext_hat_K": WrenchStamped,
}
STAMPED_TOPICS = tuple(TOPIC_TYPES)
RAMP_RATE = 20.0  # [Hz] gripper goals of a slow close
# A request takes each state topic's newest TAP_DEPTH messages (each take costs a Python call) and keeps
# TAP_KEEP: the topics of one control tick are matched by stamp, and a publisher that goes on publishing
# while a request takes its topics one after the other is caught up with by taking again (MATCH_ATTEMPTS), then by
# polling until state_wait (a burst of ticks, from a simulator catching up on a loaded machine, outruns the depth).
# Only ticks within MATCH_WINDOW of the newest joint_states count: what was kept from an earlier request
# must never answer this one (a stale state with a fresh age).
TAP_DEPTH, TAP_KEEP, MATCH_ATTEMPTS, MATCH_WINDOW = 4, 8, 5, 0.01  # [s] of the robot's clock
STALE_POLL = 0.005  # [s] between looks for a fresh state while a request waits for one
CONTROLLER_NODES = {"impedance": "cartesian_impedance_controller", "wrench": "cartesian_wrench_controller"}


class TopicTap:
    """The newest messages of one topic, serialized, taken from its subscription's history when asked.

    The subscription belongs to a node no executor spins, so nothing runs per message: DDS keeps the
    last `depth` messages (as a subscriber's queue does) and `poll` takes them, as rclpy's own
    wait_for_message does; the last `keep` taken are kept. Callers serialize their calls.
    """

    def __init__(self, node: Node, kind, topic: str, depth: int = TAP_DEPTH, keep: int = TAP_KEEP) -> None:
        # best effort, as sensor data is read: the newest of a stream counts, and a reliable reader would make the
        # publisher keep and acknowledge each of hundreds of messages a second (it matches a reliable publisher)
        qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT)
        self._sub = node.create_subscription(kind, topic, _not_spun, qos, raw=True)
        self._recent: deque[tuple[float, bytes]] = deque(maxlen=keep)  # (arrival [s, time.time()], message)

    def poll(self) -> deque[tuple[float, bytes]]:
        """Take what DDS kept since the last call; the newest `keep` messages taken, oldest first."""
        sub = self._sub
        while (taken := sub.handle.take_message(sub.msg_type, True)) is not None:
            data, info = taken
            arrived = info.get("received_timestamp") or time.time_ns()  # (0 where the middleware has none)
            self._recent.append((arrived * 1e-9, data))
        return self._recent

    def newest(self) -> tuple[float, bytes] | None:
        recent = self.poll()
        return recent[-1] if recent else None


def _not_spun(_: bytes) -> None:  # a TopicTap's subscription is never spun: nothing calls this
    raise AssertionError("a TopicTap's node must not be spun")


class FrankaRosClient(Node):
    def __init__(self, **node_options) -> None:  # (rclpy Node options: namespace, parameter_overrides, ...)
        super().__init__("franka_server", **node_options)
        self.declare_parameter(
            "host", "127.0.0.1", ParameterDescriptor(description="address the HTTP server binds", read_only=True)
        )
        self.declare_parameter("port", 5000, ParameterDescriptor(description="HTTP port", read_only=True))
        self.declare_parameter(
            "gripper_type",
            "Robotiq",
            ParameterDescriptor(description="Robotiq, Franka or None, as the original server's flag", read_only=True),
        )
        self.declare_parameter(
            "robotiq_open_position",
            ROBOTIQ_OPEN_POSITION,
            ParameterDescriptor(
                description="Robotiq: the position (0 open .. 255 closed) /open_gripper goes to; 0 opens fully "
                f"(reads 1.0, as HIL-SERL's env expects), {ROBOTIQ_PUBLISHED_OPEN_POSITION} is the published "
                "robotiq_gripper_server's (reads 0.31)",
                read_only=True,
                integer_range=[IntegerRange(from_value=0, to_value=255, step=1)],
            ),
        )
        self.declare_parameter(
            "workspace_min",
            [-0.9, -0.9, -0.05],
            ParameterDescriptor(description="lower corner of the box /pose accepts, base frame [m]"),
        )
        self.declare_parameter(
            "workspace_max",
            [0.9, 0.9, 1.2],
            ParameterDescriptor(description="upper corner of the box /pose accepts, base frame [m]"),
        )
        self.declare_parameter(
            "state_timeout",
            0.75,
            ParameterDescriptor(description="state older than this is stale: not answered [s]"),
        )
        self.declare_parameter(
            "state_wait",
            2.0,
            ParameterDescriptor(
                description="a request finding the state stale waits this long for a fresh one before its 503 [s]",
                floating_point_range=[FloatingPointRange(from_value=0.0, to_value=30.0)],
            ),
        )
        self.declare_parameter(
            "cameras_config",
            "",
            ParameterDescriptor(
                description="YAML of the simulated cameras served over HTTP ('' = none)", read_only=True
            ),
        )
        self.declare_parameter(
            "service_timeout", 5.0, ParameterDescriptor(description="how long to wait for a robot service [s]")
        )
        self.declare_parameter(
            "controller",
            "impedance",
            ParameterDescriptor(
                description="impedance: the franka_server routes over cartesian_impedance_controller; "
                "wrench: the franka_eggflip_server routes over cartesian_wrench_controller",
                read_only=True,
            ),
        )
        self.declare_parameter(
            "world_servers",
            [""],
            ParameterDescriptor(
                description="URLs of the other servers of the same simulated world, listed by GET /cameras",
                read_only=True,
            ),
        )
        self.declare_parameter(
            "base_frame",
            "panda_link0",
            ParameterDescriptor(
                description="frame of the poses: the robot's panda_link0 (with its TF prefix)", read_only=True
            ),
        )
        self.base_frame = self.get_parameter("base_frame").value
        self.settings = ServerSettings(np.zeros(3), np.zeros(3))
        self._read_settings()
        self.add_post_set_parameters_callback(lambda changes: self._read_settings())
        controller = self.get_parameter("controller").value
        if controller not in CONTROLLER_NODES:
            raise ValueError(f"controller '{controller}' must be one of {', '.join(CONTROLLER_NODES)}")
        self.controller_node = CONTROLLER_NODES[controller]
        self.settings.controller = controller
        self.settings.world_servers = tuple(u for u in self.get_parameter("world_servers").value if u)
        # the original gripper server's behaviour, with its state (one per server, as the original)
        self.gripper: GripperModel | None = make_gripper(
            self.get_parameter("gripper_type").value, self.get_parameter("robotiq_open_position").value
        )
        cameras_config = self.get_parameter("cameras_config").value
        self.cameras = CameraFeeds(self, load_cameras(cameras_config) if cameras_config else [])

        # State messages arrive at 500 Hz-1 kHz but are read at ~10 Hz: no callback per message. The state
        # topics' subscriptions live on a hidden node that no executor spins; a request takes what DDS has
        # kept in their histories (serialized) and deserializes only what it needs.
        # (A hidden node, "_" first: `ros2 node list` shows only this one. Topic names are resolved here, with
        # this node's namespace and remappings.)
        name, namespace = f"_{self.get_name()}_state", self.get_namespace()
        self._reader = reader = Node(name, namespace=namespace, context=self.context, use_global_arguments=False)

        def tap(kind, name: str, depth: int = TAP_DEPTH) -> TopicTap:
            return TopicTap(reader, kind, self.resolve_topic_name(name), depth)

        self._taps = {t: tap(TOPIC_TYPES[t], f"franka_state_controller/{t}") for t in STAMPED_TOPICS}
        self._jacobian = tap(Float64MultiArray, f"{self.controller_node}/franka_jacobian", depth=1)
        self._gripper_joints = tap(JointState, "franka_gripper/joint_states", depth=1)
        self._state_lock = threading.Lock()
        self._gripper_lock, self._gripper_commands = threading.Lock(), 0
        self._cached: StateSnapshot | None = None
        self._cache_key: tuple[bytes, ...] = ()
        qos = QoSProfile(depth=10)
        self.robot_mode: str | None = None
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(String, "franka_control/robot_mode", self._on_robot_mode, latched)

        self.pose_publisher = self.create_publisher(PoseStamped, "cartesian_impedance_controller/equilibrium_pose", qos)
        calls = self._calls = ReentrantCallbackGroup()
        self._place_clients: dict[str, Client] = {}
        self._trigger_clients = {
            name: self.create_client(Trigger, path, callback_group=calls)
            for name, path in (
                ("error_recovery", "franka_control/error_recovery"),
                ("joint_reset", "franka_control/joint_reset"),
                ("start", f"{self.controller_node}/start"),
                ("stop", f"{self.controller_node}/stop"),
                ("task_reset", "/task/reset"),  # a simulated world's scene, back as it started
            )
        }
        self._set_params = {
            node: self.create_client(SetParametersAtomically, f"{node}/set_parameters_atomically", callback_group=calls)
            for node in ("cartesian_impedance_controller", "franka_control")
        }
        self._list_params = self.create_client(
            ListParameters, "cartesian_impedance_controller/list_parameters", callback_group=calls
        )
        self._describe_params = self.create_client(
            DescribeParameters, "cartesian_impedance_controller/describe_parameters", callback_group=calls
        )
        self._compliance_ranges: dict[str, tuple[float, float] | None] | None = None
        # rclpy's ActionClient is not safe to send from other threads while the executor takes its
        # responses (goal responses get lost, and it can crash): goals are sent by a task of the executor
        self._gripper_action = ActionClient(self, GripperCommand, "franka_gripper/gripper_action")
        self._pending_gripper_goal: GripperCommand.Goal | None = None
        self.wrench_publisher = self.create_publisher(WrenchStamped, f"{CONTROLLER_NODES['wrench']}/wrench_target", qos)
        self.reset_publisher = self.create_publisher(Bool, f"{CONTROLLER_NODES['wrench']}/reset", qos)
        self.ground_truth = GroundTruth(self, self.base_frame)

    def _read_settings(self) -> None:
        """The parameters the routes read, kept current (each field replaced whole)."""
        value = lambda name: self.get_parameter(name).value  # noqa: E731
        self.settings.workspace_min = np.array(value("workspace_min"), dtype=float)
        self.settings.workspace_max = np.array(value("workspace_max"), dtype=float)
        self.settings.state_timeout = float(value("state_timeout"))
        self.settings.state_wait = float(value("state_wait"))

    def warn(self, message: str) -> None:
        self.get_logger().warn(message)

    # ------------------------------------------------------------------ state in
    def _on_robot_mode(self, msg: String) -> None:
        self.robot_mode = msg.data

    def _gripper_joint_positions(self) -> np.ndarray | None:
        """The latest franka_gripper/joint_states positions, or None without a gripper or before the first."""
        if self.gripper is None:
            return None
        with self._state_lock:
            newest = self._gripper_joints.newest()
        return None if newest is None else np.array(deserialize_message(newest[1], JointState).position)

    @property
    def state_age(self) -> float | None:
        """Seconds since the newest state message arrived (None before the first)."""
        with self._state_lock:
            newest = self._taps["joint_states"].newest()
        return None if newest is None else max(0.0, time.time() - newest[0])

    def state(self) -> StateSnapshot:
        """The newest snapshot whose stamped topics all carry the same control-tick stamp."""
        # A simulator starved of CPU for a moment (a loaded machine) goes quiet for longer than state_timeout, or
        # publishes the ticks it owes in a burst that outruns the topics' DDS depth between two takes: the request
        # waits up to state_wait for its next whole tick, as the stock client cannot retry a 503.
        wait_until = time.monotonic() + self.settings.state_wait
        attempts = 0
        while attempts < MATCH_ATTEMPTS or time.monotonic() < wait_until:
            with self._state_lock:  # request threads take from the same histories
                raw = {t: list(tap.poll()) for t, tap in self._taps.items()}
                jacobian = self._jacobian.newest()
            if not all(raw.values()) or jacobian is None:
                raise RobotUnavailable("no robot state received yet (is the robot or simulator running?)")
            received, now = raw["joint_states"][-1][0], time.time()
            age = now - received
            if age > self.settings.state_timeout:
                if time.monotonic() < wait_until:
                    time.sleep(STALE_POLL)
                    continue
                if attempts:  # fresh ticks came during the wait and none was whole: that is the cause, not the quiet
                    break  # since (which way the race at wait_until fell once decided the message)
                raise RobotUnavailable(
                    f"robot state is stale: the last one arrived {age:.2f} s ago (robot or simulator stopped?)"
                )
            attempts += 1
            key = (*(raw[t][-1][1] for t in STAMPED_TOPICS), jacobian[1])  # nothing new: the same answer
            if self._cached is not None and all(a is b for a, b in zip(key, self._cache_key, strict=True)):
                return self._cached
            match = self._match(raw, fresh_since=now - self.settings.state_timeout)
            if match is not None:
                stamp, parts = match
                snapshot = self._assemble(stamp, received, parts, jacobian[1])
                self._cached, self._cache_key = snapshot, key
                return snapshot
            if attempts >= MATCH_ATTEMPTS:  # taken again at once first (a tick being published), then polled
                time.sleep(STALE_POLL)
        raise RobotUnavailable(
            f"the robot's state topics carry no common stamp within {self.settings.state_wait:g} s (are they from "
            "one robot?)"
        )

    def _match(self, raw: dict[str, list[tuple[float, bytes]]], fresh_since: float) -> tuple[float, dict] | None:
        """The newest tick all stamped topics have (usually every topic's newest message): (stamp, messages).
        Stamps are read from the serialized messages; only the four of the tick found are deserialized. A tick whose
        joint_states arrived before `fresh_since` is stale however near its stamp: a simulator starved of CPU goes
        quiet with its clock stopped, and its first tick after, half published, must not make the one before it
        (the stale state the request waited past) an answer with a fresh age."""
        stamped = {t: [(header_stamp(data), data) for _, data in reversed(raw[t])] for t in STAMPED_TOPICS}
        newest = stamp_seconds(*stamped["joint_states"][0][0])
        for (stamp, data), (arrived, _) in zip(stamped["joint_states"], reversed(raw["joint_states"]), strict=True):
            if stamp_seconds(*stamp) < newest - MATCH_WINDOW or arrived < fresh_since:
                return None
            found = {t: next((d for s, d in stamped[t] if s == stamp), None) for t in STAMPED_TOPICS[1:]}
            if all(d is not None for d in found.values()):
                parts = {t: deserialize_message(d, TOPIC_TYPES[t]) for t, d in {"joint_states": data, **found}.items()}
                return stamp_seconds(*stamp), parts
        return None

    def _assemble(self, stamp: float, received: float, parts: dict, raw_jacobian: bytes) -> StateSnapshot:
        joints: JointState = parts["joint_states"]
        pose: PoseStamped = parts["O_T_EE"]
        twist = parts["O_dP_EE"].twist
        wrench = parts["K_F_ext_hat_K"].wrench
        p, o = pose.pose.position, pose.pose.orientation
        jacobian = np.array(deserialize_message(raw_jacobian, Float64MultiArray).data)
        if jacobian.size != 42:
            raise RobotUnavailable(f"franka_jacobian has {jacobian.size} values, expected 42")
        joints_of_gripper = self._gripper_joint_positions()
        gripper_pos = self.gripper.gripper_pos(joints_of_gripper) if joints_of_gripper is not None else 0.0
        return StateSnapshot(
            stamp=stamp,
            received=received,
            pose=np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w]),
            vel=np.array(
                [twist.linear.x, twist.linear.y, twist.linear.z, twist.angular.x, twist.angular.y, twist.angular.z]
            ),
            force=np.array([wrench.force.x, wrench.force.y, wrench.force.z]),
            torque=np.array([wrench.torque.x, wrench.torque.y, wrench.torque.z]),
            q=np.array(joints.position),
            dq=np.array(joints.velocity),
            jacobian=jacobian.reshape((6, 7), order="F"),
            gripper_pos=gripper_pos,
        )

    # ------------------------------------------------------------------ commands out
    def move(self, position: np.ndarray, quat: np.ndarray) -> None:
        if self.pose_publisher.get_subscription_count() == 0:
            raise RobotUnavailable("no controller subscribes to equilibrium_pose (is the robot or simulator running?)")
        msg = PoseStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self.base_frame
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in position)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in quat)
        self.pose_publisher.publish(msg)

    def send_wrench(self, wrench: np.ndarray) -> None:
        if self.wrench_publisher.get_subscription_count() == 0:
            raise RobotUnavailable("no controller subscribes to wrench_target (is the wrench controller running?)")
        msg = WrenchStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self.base_frame
        f, t = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = (float(v) for v in wrench)
        self.wrench_publisher.publish(msg)

    def reset_wrench_controller(self) -> None:
        if self.reset_publisher.get_subscription_count() == 0:
            raise RobotUnavailable("no controller subscribes to reset (is the wrench controller running?)")
        self.reset_publisher.publish(Bool(data=True))

    def task_state(self) -> dict:
        return self.ground_truth.state()

    def place_object(self, place: str) -> TriggerResult:
        """/task/place/<place> (std_srvs/Trigger) of the simulator's task publisher."""
        client = self._place_clients.get(place)
        if client is None:
            client = self._place_clients[place] = self.create_client(
                Trigger, f"/task/place/{place}", callback_group=self._calls
            )
        return self._call_trigger(client, 5.0)

    def _wait(self, future, timeout: float, what: str):
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            future.cancel()
            raise RobotUnavailable(f"{what} did not answer within {timeout:g} s")
        return future.result()

    def _ready(self, client, what: str) -> None:
        if not client.wait_for_service(timeout_sec=self.get_parameter("service_timeout").value):
            raise RobotUnavailable(f"{what} is not available (is the robot or simulator running?)")

    def trigger(self, name: str, timeout: float = 5.0) -> TriggerResult:
        return self._call_trigger(self._trigger_clients[name], timeout)

    def _call_trigger(self, client: Client, timeout: float) -> TriggerResult:
        self._ready(client, client.srv_name)
        response = self._wait(client.call_async(Trigger.Request()), timeout, client.srv_name)
        return TriggerResult(response.success, response.message)

    def compliance_parameter_ranges(self) -> dict[str, tuple[float, float] | None]:
        """The controller's writable double parameters and their ranges (None: unbounded), as its own
        parameter descriptors declare them; read once."""
        if self._compliance_ranges is None:
            self._ready(self._list_params, self._list_params.srv_name)
            listed = self._wait(self._list_params.call_async(ListParameters.Request()), 5.0, "list_parameters")
            names = list(listed.result.names)
            self._ready(self._describe_params, self._describe_params.srv_name)
            described = self._wait(
                self._describe_params.call_async(DescribeParameters.Request(names=names)), 5.0, "describe_parameters"
            )
            ranges = {}
            for d in described.descriptors:
                if d.type != ParameterType.PARAMETER_DOUBLE or d.read_only:
                    continue
                r = d.floating_point_range
                ranges[d.name] = (r[0].from_value, r[0].to_value) if r else None
            self._compliance_ranges = ranges
        return self._compliance_ranges

    def set_parameters(self, node: str, values: dict[str, object]) -> tuple[bool, str]:
        """Set parameters of `node` atomically: all or none. Returns (successful, reason)."""
        client = self._set_params[node]
        self._ready(client, client.srv_name)
        request = SetParametersAtomically.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg() for name, value in values.items()]
        )
        result = self._wait(client.call_async(request), 5.0, client.srv_name).result
        return result.successful, result.reason

    def wait_for_gripper(self) -> None:
        if not self._gripper_action.wait_for_server(timeout_sec=self.get_parameter("service_timeout").value):
            raise RobotUnavailable("franka_gripper/gripper_action is not available")

    def command_gripper(self, goal: GripperGoal) -> None:
        """Send a gripper goal; like the original server, do not wait for the motion.

        GripperCommand has no speed: the fingers move at the goal's speed (a full stroke in
        `goal.stroke_s`) because the target ramps from the current opening in goals at RAMP_RATE,
        each preempting the last. Any later command ends a ramp.
        """
        self.wait_for_gripper()
        with self._gripper_lock:
            self._gripper_commands += 1
            command = self._gripper_commands
        joints_of_gripper = self._gripper_joint_positions()
        if goal.stroke_s <= 0.0 or self.gripper is None or joints_of_gripper is None:
            self._send_gripper_goal(goal.position, goal.max_effort)
            return
        start = self.gripper.action_position(joints_of_gripper)
        stroke = abs(self.gripper.closed_position - self.gripper.open_position)
        duration = goal.stroke_s * min(abs(goal.position - start), stroke) / stroke
        threading.Thread(
            target=self._ramp_gripper, args=(command, start, goal.position, goal.max_effort, duration), daemon=True
        ).start()

    def _ramp_gripper(self, command: int, start: float, end: float, max_effort: float, duration: float) -> None:
        t0 = time.monotonic()
        while self._gripper_commands == command:
            fraction = min(1.0, (time.monotonic() - t0) / duration) if duration > 0.0 else 1.0
            self._send_gripper_goal(start + fraction * (end - start), max_effort)
            if fraction >= 1.0:
                return
            time.sleep(1.0 / RAMP_RATE)

    def _send_gripper_goal(self, position: float, max_effort: float) -> None:
        goal = GripperCommand.Goal()
        goal.command.position, goal.command.max_effort = float(position), float(max_effort)
        with self._gripper_lock:
            self._pending_gripper_goal = goal  # a newer goal replaces one not sent yet: it would preempt it
        if self.executor is None:  # not spinning (yet): no responses to race with
            self._send_pending_gripper_goal()
        else:
            self.executor.create_task(self._send_pending_gripper_goal)

    def _send_pending_gripper_goal(self) -> None:
        """In the executor: send the latest goal."""
        with self._gripper_lock:
            goal, self._pending_gripper_goal = self._pending_gripper_goal, None
        if goal is not None:
            self._gripper_action.send_goal_async(goal)

    def destroy_node(self) -> None:
        self._reader.destroy_node()
        super().destroy_node()


__all__ = ["FrankaRosClient"]
