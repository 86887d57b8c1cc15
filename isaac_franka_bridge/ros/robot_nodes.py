"""One simulated robot's ROS 2 nodes, named and laid out as the real Franka stack's, in its namespace.

  franka_control                    error recovery and joint reset services, robot_mode, reflex settings
  franka_state_controller           joint_states, O_T_EE, O_dP_EE, K_F_ext_hat_K
  cartesian_impedance_controller    compliance parameters, equilibrium_pose, franka_jacobian, start/stop
  cartesian_wrench_controller       (instead, for a robot with controller wrench: egg_flip) wrench_target,
                                    reset, franka_jacobian, start/stop, its settings as read-only parameters
  franka_gripper                    gripper_action (control_msgs/GripperCommand), joint_states
  sim                               simulation-only settings (payload, wrench noise), ~/external_wrench,
                                    joint_states of every joint, robot_description
Each node only translates between ROS and its RobotControl (sim/loop.py), always through the loop's
submit/call; none knows the backend. Publishing runs in the simulation thread (`publish`).
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import fields

import numpy as np
from control_msgs.action import GripperCommand
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.task import Future as RclpyFuture
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, String
from std_srvs.srv import Trigger

from ..controller import COMPLIANCE_PARAMETERS
from ..controller.impedance import normalized_quaternion
from ..sim import reflexes
from ..sim.loop import RobotControl, RobotSettings, SimulationLoop
from ..sim.state import RobotSnapshot
from ..world import RobotSpec
from . import messages as msgs
from . import parameters
from .listened import ListenedPublisher

GRIPPER_SETTLE_S = 0.2  # [s] of simulated time the fingers stand still: the goal has ended
GRIPPER_SETTLE_TIMEOUT = 3.0  # [s] of simulated time: a gripper goal ends after this long in any case
GRIPPER_WALL_TIMEOUT = 30.0  # [s] of wall-clock time, when the simulation does not advance at all
JOINT_RESET_TIMEOUT = 35.0  # [s]
STATE_QOS = QoSProfile(depth=10)
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _value(node: Node, name: str):
    return node.get_parameter(name).value


def _answer(response: Trigger.Response, success: bool, message: str) -> Trigger.Response:
    response.success, response.message = success, message
    return response


class RobotNode(Node):
    """A node of one robot: its parameters declared from the table, its loop and control at hand."""

    def __init__(self, name: str, robot: RobotSpec, loop: SimulationLoop, control: RobotControl, **defaults):
        super().__init__(name, namespace=f"/{robot.namespace}")
        parameters.declare(self, name, defaults)
        self.robot, self.loop, self.control = robot, loop, control

    def trigger(self, fn, response: Trigger.Response, success: str) -> Trigger.Response:
        """Run `fn` in the simulation thread; a refusal (RuntimeError) is the service's failure."""
        try:
            self.loop.call(fn)
        except RuntimeError as exc:  # in a reflex, or the loop died: the robot refuses
            return _answer(response, False, str(exc))
        return _answer(response, True, success)


class FrankaControl(RobotNode):
    def __init__(self, robot: RobotSpec, loop: SimulationLoop, control: RobotControl, settings) -> None:
        super().__init__("franka_control", robot, loop, control, reset_joint_target=list(robot.reset_joint_target))
        self.settings = settings  # called when a parameter that RobotSettings holds changes
        self.add_post_set_parameters_callback(lambda changes: self.settings())
        self.mode_publisher = self.create_publisher(String, "~/robot_mode", LATCHED)
        self._mode_text = ""
        self.create_service(Trigger, "~/error_recovery", self._on_error_recovery)
        self.create_service(Trigger, "~/joint_reset", self._on_joint_reset, callback_group=ReentrantCallbackGroup())

    def reflex_limits(self) -> reflexes.ReflexLimits:
        p = lambda name: _value(self, f"reflex.{name}")  # noqa: E731
        return reflexes.ReflexLimits(
            enabled=p("enabled"),
            contact_force=p("contact_force"),
            joint_position_margin=p("joint_position_margin"),
            joint_velocity_scale=p("joint_velocity_scale"),
            torque_scale=p("torque_scale"),
            workspace_min=np.array(p("workspace_min")),
            workspace_max=np.array(p("workspace_max")),
        )

    def declared_load(self) -> tuple[float, np.ndarray]:
        return _value(self, "load_mass"), np.array(_value(self, "load_center_of_mass"))

    def mode_text(self) -> str:
        """`impedance`, `idle`, `joint_reset`, or `reflex: <why>`."""
        reflex = self.control.reflex
        return f"reflex: {reflex}" if reflex else self.control.mode.value

    def publish(self) -> None:
        """robot_mode, on change only (checked at every state tick, from the simulation thread)."""
        text = self.mode_text()
        if text != self._mode_text:
            self._mode_text = text
            self.mode_publisher.publish(String(data=text))

    def _on_error_recovery(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        try:
            return _answer(response, True, self.loop.call(self.control.recover))
        except RuntimeError as exc:
            return _answer(response, False, str(exc))

    async def _on_joint_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """A coroutine: while the arm moves (seconds) the node's executor runs the other callbacks, so that this
        node needs no thread of its own (a thread pool's executor costs about 1.3 ms of CPU per service call)."""
        target = np.array(_value(self, "reset_joint_target"), dtype=float)
        self.get_logger().info(f"joint reset to {target.round(3).tolist()}")
        try:
            done = self.loop.call(lambda: self.control.begin_joint_reset(target))
        except RuntimeError as exc:  # in a reflex: the robot refuses until error recovery
            return _answer(response, False, str(exc))
        reached = await awaitable(done, JOINT_RESET_TIMEOUT, timed_out=False)
        if reached:
            return _answer(response, True, "at the reset joint target")
        if self.control.reflex is not None:
            return _answer(response, False, f"joint reset stopped by a reflex: {self.control.reflex}")
        return _answer(response, False, "joint reset timed out before the target")


def awaitable(done: concurrent.futures.Future, timeout: float, timed_out: object) -> RclpyFuture:
    """What a coroutine callback awaits for `done` (resolved by the simulation thread): its result, or `timed_out`
    once `timeout` s have passed, whichever comes first."""
    result, lock = RclpyFuture(), threading.Lock()

    def settle(value: object) -> None:  # (the simulation thread, or the timer's)
        with lock:
            if not result.done():
                result.set_result(value)

    timer = threading.Timer(timeout, settle, (timed_out,))
    timer.daemon = True
    timer.start()

    def on_done(future: concurrent.futures.Future) -> None:
        timer.cancel()
        settle(future.result())

    done.add_done_callback(on_done)
    return result


class FrankaStateController(RobotNode):
    def __init__(self, robot: RobotSpec, loop: SimulationLoop, control: RobotControl) -> None:
        super().__init__("franka_state_controller", robot, loop, control)
        self.joints = ListenedPublisher(self, JointState, "~/joint_states", STATE_QOS)
        self.pose = ListenedPublisher(self, PoseStamped, "~/O_T_EE", STATE_QOS)
        self.twist = ListenedPublisher(self, TwistStamped, "~/O_dP_EE", STATE_QOS)
        self.wrench = ListenedPublisher(self, WrenchStamped, "~/K_F_ext_hat_K", STATE_QOS)


POSE_TRACE_ENV = "FRANKA_SIM_TRACE_POSE"  # a file: benchmarks/run.py's measure of the pose command path


def pose_tracer() -> Callable[[float, float], None] | None:
    """With $FRANKA_SIM_TRACE_POSE set (benchmarks/run.py), a writer of one line per equilibrium pose the
    controller takes: "<x> <when the controller took it> <when the node received it>" (Unix times)."""
    path = os.environ.get(POSE_TRACE_ENV)
    if not path:
        return None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return lambda x, received: os.write(fd, f"{x!r} {time.time()!r} {received!r}\n".encode())


class ImpedanceController(RobotNode):
    def __init__(self, robot: RobotSpec, loop: SimulationLoop, control: RobotControl) -> None:
        super().__init__("cartesian_impedance_controller", robot, loop, control)
        self.add_post_set_parameters_callback(self._on_compliance_set)
        self.jacobian = ListenedPublisher(self, Float64MultiArray, "~/franka_jacobian", STATE_QOS)
        self.create_subscription(PoseStamped, "~/equilibrium_pose", self._on_equilibrium_pose, COMMAND_QOS)
        self.create_service(Trigger, "~/start", self._on_start)
        self.create_service(Trigger, "~/stop", self._on_stop)
        self._pose_trace = pose_tracer()

    def compliance(self) -> dict[str, float]:
        return {p.name: _value(self, p.name) for p in COMPLIANCE_PARAMETERS}

    def _on_compliance_set(self, params: list[Parameter]) -> None:
        updates = {p.name: float(p.value) for p in params}
        self.loop.submit(lambda: self.control.controller.set_params(updates))

    def _on_equilibrium_pose(self, msg: PoseStamped) -> None:
        received = time.time()
        position, quat = msgs.pose_from_msg(msg)
        frame = msg.header.frame_id
        if frame not in ("", self.robot.base_frame):
            self.get_logger().warn(
                f"equilibrium_pose ignored: frame '{frame}' is not the base frame '{self.robot.base_frame}'",
                throttle_duration_sec=1.0,
            )
            return
        try:
            quat = normalized_quaternion(quat)
            if not np.all(np.isfinite(position)):
                raise ValueError(f"position must be finite, got {position.tolist()}")
        except ValueError as exc:
            self.get_logger().warn(f"equilibrium_pose ignored: {exc}", throttle_duration_sec=1.0)
            return
        controller, trace = self.control.controller, self._pose_trace
        if trace is None:
            self.loop.submit(lambda: controller.set_target(position, quat))
            return

        def set_and_trace() -> None:
            controller.set_target(position, quat)
            trace(float(position[0]), received)

        self.loop.submit(set_and_trace)

    def _on_start(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self.trigger(self.control.start_controller, response, "impedance controller started")

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self.trigger(self.control.stop_controller, response, "impedance controller stopped")


class WrenchController(RobotNode):
    """HIL-SERL's egg-flip controller: a target wrench (held for max_duration_between_commands), a box the
    arm is kept in, and a reset (Bool true) that moves the arm back to its joints for a second. Its
    settings (the original's YAML) are read-only parameters, as a controller's loaded configuration."""

    def __init__(self, robot: RobotSpec, loop: SimulationLoop, control: RobotControl) -> None:
        super().__init__("cartesian_wrench_controller", robot, loop, control)
        params = control.controller.params
        for f in fields(params):
            value = getattr(params, f.name)
            value = [float(v) for v in value] if isinstance(value, tuple) else float(value)
            self.declare_parameter(
                f.name, value, ParameterDescriptor(description=f"as loaded: {f.name}", read_only=True)
            )
        self.jacobian = ListenedPublisher(self, Float64MultiArray, "~/franka_jacobian", STATE_QOS)
        self.create_subscription(WrenchStamped, "~/wrench_target", self._on_wrench, COMMAND_QOS)
        self.create_subscription(Bool, "~/reset", self._on_reset, COMMAND_QOS)
        self.create_service(Trigger, "~/start", self._on_start)
        self.create_service(Trigger, "~/stop", self._on_stop)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        wrench = msgs.wrench_from_msg(msg)
        if not np.all(np.isfinite(wrench)):
            self.get_logger().warn("wrench_target ignored: non-finite values", throttle_duration_sec=1.0)
            return
        self.loop.submit(lambda: self.control.controller.set_target_wrench(wrench))

    def _on_reset(self, msg: Bool) -> None:
        if msg.data:
            self.loop.submit(self.control.controller.reset)

    def _on_start(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self.trigger(self.control.start_controller, response, "wrench controller started")

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        return self.trigger(self.control.stop_controller, response, "wrench controller stopped")


class FrankaGripper(RobotNode):
    """GripperCommand goals drive the fingers; the answer comes once they stop. A newer goal preempts
    the active one (as a gripper action controller does), so rapid commands never pile up."""

    def __init__(self, robot: RobotSpec, loop: SimulationLoop, control: RobotControl) -> None:
        super().__init__("franka_gripper", robot, loop, control)
        self.joints = ListenedPublisher(self, JointState, "~/joint_states", STATE_QOS)
        self._lock, self._goal = threading.Lock(), 0
        self.latest: RobotSnapshot | None = None  # set by the simulation thread
        self.action = ActionServer(
            self,
            GripperCommand,
            "~/gripper_action",
            execute_callback=self._execute,
            goal_callback=self._accept,
            callback_group=ReentrantCallbackGroup(),
        )

    @staticmethod
    def _accept(goal: GripperCommand.Goal) -> GoalResponse:
        c = goal.command
        return GoalResponse.ACCEPT if math.isfinite(c.position) and math.isfinite(c.max_effort) else GoalResponse.REJECT

    def _execute(self, goal_handle) -> GripperCommand.Result:
        """Drive the fingers; the goal ends when they have stood still for GRIPPER_SETTLE_S of simulated
        time, or after GRIPPER_SETTLE_TIMEOUT simulated seconds. Simulated, not wall-clock, time: a
        simulation slowed down by a loaded CPU must not look like fingers that stopped."""
        command = goal_handle.request.command
        with self._lock:
            self._goal += 1
            mine = self._goal
        body = self.control.body
        self.loop.call(lambda: body.command_gripper(command.position, command.max_effort))
        start = self.latest.stamp
        previous, still_since = None, start
        position = float("nan")
        wall_deadline = time.monotonic() + GRIPPER_WALL_TIMEOUT  # the simulation stopped altogether
        while time.monotonic() < wall_deadline and self.loop.running:
            time.sleep(0.02)
            snap = self.latest
            position = float(snap.gripper_positions[0])
            if self._goal != mine:  # preempted by a newer goal
                goal_handle.abort()
                return GripperCommand.Result(position=position, effort=0.0, stalled=False, reached_goal=False)
            if previous is None or abs(position - previous) > 1e-4:
                still_since = snap.stamp
            previous = position
            if snap.stamp - still_since > GRIPPER_SETTLE_S or snap.stamp - start > GRIPPER_SETTLE_TIMEOUT:
                break
        reached = abs(position - command.position) < 0.02
        goal_handle.succeed()
        return GripperCommand.Result(position=position, effort=0.0, stalled=not reached, reached_goal=reached)


class RobotSim(RobotNode):
    """What only a simulated robot has: a payload, wrench noise and pushes; plus the robot's
    description and joint_states of every joint, as robot_state_publisher's inputs."""

    def __init__(self, robot: RobotSpec, loop: SimulationLoop, control: RobotControl, settings) -> None:
        super().__init__("sim", robot, loop, control, gripper_type=robot.gripper_type)
        self.settings = settings
        self.add_post_set_parameters_callback(lambda changes: self.settings())
        self.all_joints = ListenedPublisher(self, JointState, "joint_states", STATE_QOS)
        self.create_subscription(WrenchStamped, "~/external_wrench", self._on_external_wrench, COMMAND_QOS)
        description = control.body.robot_description()
        if description is not None:
            self.description = self.create_publisher(String, "robot_description", LATCHED)
            self.description.publish(String(data=description))

    def payload(self) -> tuple[float, np.ndarray, np.ndarray]:
        return (
            _value(self, "payload_mass"),
            np.array(_value(self, "payload_center_of_mass")),
            np.array(_value(self, "payload_inertia")).reshape(3, 3),
        )

    def wrench_noise(self) -> tuple[np.ndarray, np.ndarray]:
        return np.array(_value(self, "wrench_bias")), np.array(_value(self, "wrench_noise_std"))

    def _on_external_wrench(self, msg: WrenchStamped) -> None:
        wrench = msgs.wrench_from_msg(msg)
        if not np.all(np.isfinite(wrench)):
            self.get_logger().warn("external wrench ignored: non-finite values")
            return
        body = self.control.body
        self.loop.submit(lambda: body.set_external_wrench(wrench))


class RobotNodes:
    """The nodes of one robot, and what of each tick they publish."""

    def __init__(self, robot: RobotSpec, loop: SimulationLoop, control: RobotControl) -> None:
        self.robot, self.loop, self.control = robot, loop, control
        self.control_node = FrankaControl(robot, loop, control, self.apply_settings)
        self.state_node = FrankaStateController(robot, loop, control)
        # the controller it runs, as the real stack's launch file chooses one
        wrench = robot.controller == "wrench"
        self.controller_node = (WrenchController if wrench else ImpedanceController)(robot, loop, control)
        self.impedance_node = None if wrench else self.controller_node
        self.sim_node = RobotSim(robot, loop, control, self.apply_settings)
        # like the real stack, franka_gripper exists only when a gripper is mounted
        self.gripper_node = FrankaGripper(robot, loop, control) if robot.gripper_type != "None" else None
        self.nodes = [self.control_node, self.state_node, self.controller_node, self.sim_node]
        # nodes with callbacks that wait for seconds (a gripper's motion); the others' wait one tick at most (the
        # joint reset, which takes seconds, is a coroutine: its node's executor goes on meanwhile)
        self.waiting_nodes = []
        if self.gripper_node is not None:
            self.nodes.append(self.gripper_node)
            self.waiting_nodes.append(self.gripper_node)
        body, prefix = control.body, robot.prefix
        self.messages = msgs.StateMessages(
            robot.base_frame,
            f"{prefix}panda_EE",
            body.arm_joint_names,
            body.gripper_joint_names,
            body.joint_names,
            tuple(prefix + f for f in body.frame_names),
        )
        m = self.messages
        state, controller = self.state_node, self.controller_node
        # in the order the topics of a tick go out
        self._arm_topics = (
            (controller.jacobian, m.jacobian),
            (state.pose, m.pose),
            (state.twist, m.twist),
            (state.wrench, m.wrench),
            (state.joints, m.joints),
        )
        self.apply_settings()

    def settings(self) -> RobotSettings:
        """The robot's parameters, as the loop takes them."""
        bias, noise = self.sim_node.wrench_noise()
        return RobotSettings(
            reflex_limits=self.control_node.reflex_limits(),
            declared_load=self.control_node.declared_load(),
            payload=self.sim_node.payload(),
            wrench_bias=bias,
            wrench_noise_std=noise,
        )

    def apply_settings(self) -> None:
        if not hasattr(self, "sim_node"):  # still declaring parameters: applied once all nodes exist
            return
        settings = self.settings()
        self.loop.submit(lambda: self.control.configure(settings))

    def publish_arm(self, stamp: tuple[int, int], snap: RobotSnapshot) -> None:
        """The arm's state topics of a state tick (simulation thread), each only if it is listened to."""
        if self.gripper_node is not None:
            self.gripper_node.latest = snap
        for publisher, serialize in self._arm_topics:
            if publisher.listened:
                publisher.publish(serialize(stamp, snap))
        self.control_node.publish()

    def publish_joints(self, stamp: tuple[int, int], snap: RobotSnapshot, tf: bool) -> bytes | None:
        """joint_states of the gripper and of every joint, each only if it is listened to (simulation
        thread); returns the robot's TF message if `tf` (the world publishes it). Every joint and frame is
        taken only where one of them goes out."""
        m, gripper = self.messages, self.gripper_node
        if gripper is not None and gripper.joints.listened:
            gripper.joints.publish(m.gripper(stamp, snap))
        all_joints = self.sim_node.all_joints.listened
        if not (all_joints or tf):
            return None
        joints = self.control.joints()
        if all_joints:
            self.sim_node.all_joints.publish(m.all_joints(stamp, joints))
        return m.tf(stamp, joints) if tf else None
