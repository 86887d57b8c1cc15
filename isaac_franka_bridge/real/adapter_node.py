"""real_state_adapter: the contract's ROS 2 interfaces (docs/ros_interfaces.md) over franka_ros2 and a
ros2_control Cartesian impedance controller, so that franka_server_ros2 drives the real arm as it drives
the simulated one. real.launch.py starts it once the controller is up; it needs franka_msgs.

Nodes of this process (in the robot's namespace) and what each does on the real robot:
- franka_state_controller: franka_robot_state_broadcaster's FrankaRobotState -> joint_states, O_T_EE,
  O_dP_EE, K_F_ext_hat_K, cartesian_impedance_controller/franka_jacobian (one stamp per message, at up
  to `publish_rate`), franka_control/robot_mode.
- cartesian_impedance_controller: the serl compliance parameters (names and ranges of contract.md
  section 3), forwarded to the controller's own parameters through `compliance_map`; ~/equilibrium_pose
  (quaternion normalised) -> the controller's target topic; ~/start and ~/stop switch the controller
  through controller_manager.
- franka_control: ~/error_recovery (franka_hardware's error recovery action, then the controller is
  switched on again unless it was stopped on request), ~/joint_reset (franka_hardware's PTP motion to
  reset_joint_target with the controller off), load_mass / load_center_of_mass / load_inertia ->
  franka_hardware's set_load service.
- serl_gripper: Franka hand: ~/gripper_action (GripperCommand) -> franka_gripper's move and grasp
  (real/gripper.py says why); Robotiq: the driver's joint state of the knuckle joint ->
  franka_gripper/joint_states.

Calls to franka_ros2 and controller_manager go out from a node of their own (`serl_adapter_calls`) spun
by one thread, so that requests and their answers never race (rclpy's clients are not thread-safe).
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import rclpy
from builtin_interfaces.msg import Duration, Time
from control_msgs.action import GripperCommand
from controller_manager_msgs.srv import ListControllers, SwitchController
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, ParameterType, SetParametersResult
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger

from franka_server_ros2.process import ignore_stop_signals, stop_with_parent
from isaac_franka_bridge.controller.parameters import COMPLIANCE_PARAMETERS

from . import compliance, gripper, state

DEFAULT_RESET_TARGET = [0.0, 0.0, 0.0, -1.9, 0.0, 2.0, 0.0]  # HIL-SERL franka_server's reset_joint_target
GOAL_SUCCEEDED = 4  # action_msgs/GoalStatus.STATUS_SUCCEEDED
DISCOVERY_WAIT = 2.0  # [s] for a server to be discovered before a call
# franka_hardware's servers (franka_ros2 >= 2.0), in the robot's namespace
RECOVERY, PTP_MOTION, SET_LOAD = "action_server/error_recovery", "action_server/ptp_motion", "service_server/set_load"


def load_franka_messages() -> SimpleNamespace:
    """The franka_msgs types this node uses; ImportError when franka_ros2 is not sourced."""
    from franka_msgs.action import ErrorRecovery, Grasp, Move
    from franka_msgs.msg import FrankaRobotState
    from franka_msgs.srv import SetLoad

    try:
        from franka_msgs.action import PTPMotion  # franka_ros2 >= 2.2
    except ImportError:
        PTPMotion = None  # noqa: N806
    return SimpleNamespace(
        FrankaRobotState=FrankaRobotState,
        ErrorRecovery=ErrorRecovery,
        Grasp=Grasp,
        Move=Move,
        SetLoad=SetLoad,
        PTPMotion=PTPMotion,
    )


@dataclass
class Status:
    """What the nodes share: the impedance controller's state and a joint reset under way."""

    controller_active: bool = True  # real.launch.py starts this node once the controller is active
    stopped_on_request: bool = False
    joint_reset: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class Calls:
    """Outgoing service and action calls, run on a node of their own by one thread; callers wait."""

    def __init__(self, namespace: str, context=None) -> None:
        self.node = Node("serl_adapter_calls", namespace=namespace, context=context)
        self._executor = SingleThreadedExecutor(context=context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._executor.spin, name="adapter-calls", daemon=True)
        self._thread.start()

    def run(self, coroutine_function: Callable, timeout: float, what: str):
        """Run `await coroutine_function()` on the calls thread; its result, or TimeoutError naming `what`."""
        done, box = threading.Event(), {}

        async def task():
            try:
                box["result"] = await coroutine_function()
            except Exception as exc:  # handed to the caller
                box["error"] = exc
            finally:
                done.set()

        self._executor.create_task(task)  # wakes the calls thread
        if not done.wait(timeout):
            raise TimeoutError(f"{what} did not answer within {timeout:g} s")
        if "error" in box:
            raise box["error"]
        return box["result"]

    def service(self, client, request, timeout: float):
        client.wait_for_service(timeout_sec=min(timeout, DISCOVERY_WAIT))  # just created: let discovery finish

        async def call():
            if not client.service_is_ready():
                raise TimeoutError(f"{client.srv_name} is not available")
            return await client.call_async(request)

        return self.run(call, timeout, client.srv_name)

    def action(self, client: ActionClient, name: str, goal, timeout: float) -> tuple[bool, object]:
        """(succeeded, result) of one goal to the action `name` of `client`."""
        client.wait_for_server(timeout_sec=min(timeout, DISCOVERY_WAIT))

        async def call():
            if not client.server_is_ready():
                raise TimeoutError(f"action {name} is not available")
            handle = await client.send_goal_async(goal)
            if not handle.accepted:
                return False, None
            response = await handle.get_result_async()
            return response.status == GOAL_SUCCEEDED, response.result

        return self.run(call, timeout, f"action {name}")

    def shutdown(self) -> None:
        self._executor.shutdown()
        self._thread.join(5.0)
        self.node.destroy_node()


class ControllerSwitch:
    """Switch the Cartesian controller on and off through controller_manager/switch_controller."""

    def __init__(self, calls: Calls, controller_manager: str, controller: str, status: Status) -> None:
        self.controller = controller
        self.status = status
        self._calls = calls
        self._switch = calls.node.create_client(SwitchController, f"{controller_manager}/switch_controller")
        self._list = calls.node.create_client(ListControllers, f"{controller_manager}/list_controllers")

    def is_active(self) -> bool:
        response = self._calls.service(self._list, ListControllers.Request(), 5.0)
        return any(c.name == self.controller and c.state == "active" for c in response.controller)

    def set_active(self, active: bool) -> tuple[bool, str]:
        request = SwitchController.Request()
        if active:
            request.activate_controllers = [self.controller]
        else:
            request.deactivate_controllers = [self.controller]
        request.strictness = SwitchController.Request.STRICT
        request.activate_asap = True
        request.timeout = Duration(sec=5)
        response = self._calls.service(self._switch, request, 10.0)
        if not response.ok:
            return False, f"controller_manager refused to switch {self.controller}"
        self.status.controller_active = active
        return True, f"{self.controller} {'started' if active else 'stopped'}"


class StateNode(Node):
    """franka_state_controller: FrankaRobotState in, the contract's state topics out."""

    def __init__(self, status: Status, state_type=None, **kwargs) -> None:
        super().__init__("franka_state_controller", **kwargs)
        self.status = status
        self._state_type = state_type
        descriptor = lambda text: ParameterDescriptor(description=text, read_only=True)  # noqa: E731
        self.declare_parameter(
            "robot_state_topic",
            "franka_robot_state_broadcaster/robot_state",
            descriptor("franka_msgs/FrankaRobotState topic of franka_robot_state_broadcaster"),
        )
        self.declare_parameter(
            "publish_rate", 500.0, descriptor("most state messages a second passed on [Hz]; 0 = every one")
        )
        self.declare_parameter(
            "kinematics_tolerance",
            0.005,
            descriptor("warn when the arm model's O_T_EE differs from the robot's by more than this [m]"),
        )
        rate = self.get_parameter("publish_rate").value
        self._period = 1.0 / rate if rate > 0 else 0.0
        self._tolerance = self.get_parameter("kinematics_tolerance").value
        self._last = -math.inf
        qos = QoSProfile(depth=10)
        self.joint_states = self.create_publisher(JointState, "franka_state_controller/joint_states", qos)
        self.o_t_ee = self.create_publisher(PoseStamped, "franka_state_controller/O_T_EE", qos)
        self.o_dp_ee = self.create_publisher(TwistStamped, "franka_state_controller/O_dP_EE", qos)
        self.wrench = self.create_publisher(WrenchStamped, "franka_state_controller/K_F_ext_hat_K", qos)
        self.jacobian = self.create_publisher(Float64MultiArray, "cartesian_impedance_controller/franka_jacobian", qos)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.robot_mode = self.create_publisher(String, "franka_control/robot_mode", latched)
        self._mode: str | None = None
        self._warned: dict[str, float] = {}
        if state_type is not None:
            self.create_subscription(
                state_type,
                self.get_parameter("robot_state_topic").value,
                self._on_raw_state,
                QoSProfile(depth=10),
                raw=True,
                callback_group=MutuallyExclusiveCallbackGroup(),
            )

    def _on_raw_state(self, data: bytes) -> None:
        now = time.monotonic()
        if now - self._last < self._period:  # a 1 kHz broadcaster: deserialize only what goes out
            return
        self._last = now
        self.on_robot_state(deserialize_message(data, self._state_type))

    def _warn_every(self, key: str, period: float, message: str) -> None:
        now = time.monotonic()
        if now - self._warned.get(key, -math.inf) >= period:
            self._warned[key] = now
            self.get_logger().warn(message)

    def on_robot_state(self, msg) -> None:
        """One FrankaRobotState (or a message of its shape): the contract's topics, all with its stamp."""
        try:
            converted = state.convert(msg)
        except ValueError as exc:
            self._warn_every("malformed", 5.0, f"robot state not passed on: {exc}")
            return
        if converted.kinematics_error > self._tolerance:
            self._warn_every(
                "kinematics",
                10.0,
                f"the arm model puts the end effector {converted.kinematics_error * 1000:.1f} mm from the robot's "
                "O_T_EE: franka_jacobian and O_dP_EE are off (is this an FR3/Panda, is F_T_EE right?)",
            )
        self.publish(converted, msg.o_t_ee.header.frame_id, msg.k_f_ext_hat_k.header.frame_id)
        with self.status.lock:
            text = state.robot_mode_text(
                msg.robot_mode,
                getattr(msg, "current_errors", None),
                self.status.controller_active,
                self.status.joint_reset,
            )
        if text != self._mode:
            self._mode = text
            self.robot_mode.publish(String(data=text))
            self.get_logger().info(f"robot mode: {text}")

    def publish(self, s: state.ContractState, base_frame: str, stiffness_frame: str) -> None:
        stamp = Time(sec=s.sec, nanosec=s.nanosec)
        joints = JointState()
        joints.header.stamp = stamp
        joints.name = list(s.joint_names)
        joints.position, joints.velocity, joints.effort = s.q.tolist(), s.dq.tolist(), s.tau.tolist()
        pose = PoseStamped()
        pose.header.stamp, pose.header.frame_id = stamp, base_frame
        p, o = pose.pose.position, pose.pose.orientation
        p.x, p.y, p.z = (float(v) for v in s.position)
        o.x, o.y, o.z, o.w = (float(v) for v in s.quaternion)
        twist = TwistStamped()
        twist.header.stamp, twist.header.frame_id = stamp, base_frame
        t = twist.twist
        t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = (float(v) for v in s.twist)
        wrench = WrenchStamped()
        wrench.header.stamp, wrench.header.frame_id = stamp, stiffness_frame
        w = wrench.wrench
        w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z = (float(v) for v in s.wrench)
        # the server completes a snapshot when the stamped topics of one tick are in: Jacobian first
        self.jacobian.publish(Float64MultiArray(data=state.jacobian_column_major(s.jacobian)))
        self.o_t_ee.publish(pose)
        self.o_dp_ee.publish(twist)
        self.wrench.publish(wrench)
        self.joint_states.publish(joints)


class ImpedanceNode(Node):
    """cartesian_impedance_controller: the serl compliance parameters and the pose target, over the real
    Cartesian controller (crisp_controllers' CartesianController by default)."""

    def __init__(self, status: Status, calls: Calls, **kwargs) -> None:
        super().__init__("cartesian_impedance_controller", **kwargs)
        self.status = status
        self._calls = calls
        read_only = lambda text: ParameterDescriptor(description=text, read_only=True)  # noqa: E731
        self.declare_parameter("controller_name", "crisp_cartesian_impedance_controller", read_only("the controller"))
        self.declare_parameter("controller_manager", "controller_manager", read_only("its controller_manager node"))
        self.declare_parameter("controller_target_topic", "target_pose", read_only("its PoseStamped target topic"))
        self.declare_parameter("target_frame_id", "", read_only("frame_id of the targets sent ('' = as received)"))
        self.declare_parameter(
            "compliance_map", list(compliance.CRISP_MAP), read_only("serl_name=controller_parameter entries")
        )
        for spec in COMPLIANCE_PARAMETERS:
            self.declare_parameter(
                spec.name,
                spec.default,
                ParameterDescriptor(
                    description=spec.description,
                    type=ParameterType.PARAMETER_DOUBLE,
                    floating_point_range=[FloatingPointRange(from_value=spec.low, to_value=spec.high)],
                ),
            )
        self.mapping = compliance.parse_map(self.get_parameter("compliance_map").value)  # ValueError: FATAL
        self.controller = self.get_parameter("controller_name").value
        self.switch = ControllerSwitch(calls, self.get_parameter("controller_manager").value, self.controller, status)
        self._controller_params = AsyncParameterClient(calls.node, self.controller)
        self._ranges: dict[str, tuple[float, float] | None] | None = None
        self._frame = self.get_parameter("target_frame_id").value
        self._target = self.create_publisher(
            PoseStamped, self.get_parameter("controller_target_topic").value, QoSProfile(depth=1)
        )
        self.create_subscription(PoseStamped, "~/equilibrium_pose", self._on_pose, QoSProfile(depth=10))
        services = ReentrantCallbackGroup()
        self.create_service(Trigger, "~/start", self._on_start, callback_group=services)
        self.create_service(Trigger, "~/stop", self._on_stop, callback_group=services)
        self.add_on_set_parameters_callback(self._on_set)
        self._applied = False

    def serl_values(self) -> dict[str, float]:
        return {spec.name: float(self.get_parameter(spec.name).value) for spec in COMPLIANCE_PARAMETERS}

    # ---------------------------------------------------------------- compliance
    def apply(self, values: dict[str, float], changed: set[str]) -> tuple[bool, str]:
        """Forward the controller parameters that `changed` serl parameters set (all at once); (ok, reason)."""
        targets = {t for name in changed for t in self.mapping.get(name, ())}
        forward = {k: v for k, v in compliance.controller_values(values, self.mapping).items() if k in targets}
        for name in sorted(changed - set(self.mapping)):
            if values[name] != compliance.SERL_DEFAULTS[name]:
                self.get_logger().warn(f"{name}={values[name]:g} has no counterpart in {self.controller}: not applied")
        if not forward:
            return True, ""
        forward, clamped = compliance.clamp(forward, self._controller_ranges())
        for name, (sent, applied) in sorted(clamped.items()):
            self.get_logger().warn(f"{self.controller}.{name}: {sent:g} is outside its range, {applied:g} applied")
        parameters = [Parameter(name, value=float(value)) for name, value in sorted(forward.items())]
        self._controller_params.wait_for_services(timeout_sec=DISCOVERY_WAIT)

        async def call():
            if not self._controller_params.services_are_ready():
                raise TimeoutError(f"{self.controller} has no parameter services")
            return await self._controller_params.set_parameters_atomically(parameters)

        try:
            result = self._calls.run(call, 5.0, f"{self.controller}/set_parameters_atomically").result
        except TimeoutError as exc:
            return False, str(exc)
        if not result.successful:
            return False, f"{self.controller} refused: {result.reason}"
        text = ", ".join(f"{p.name}={p.value:g}" for p in parameters)
        self.get_logger().info(f"applied to {self.controller}: {text}")
        return True, ""

    def apply_all(self) -> tuple[bool, str]:
        """Send every mapped parameter (at start: the controller then has the serl values)."""
        ok, reason = self.apply(self.serl_values(), set(compliance.SERL_NAMES))
        self._applied = ok
        return ok, reason

    def keep_applying(self, period: float = 2.0) -> None:
        """Apply the compliance now and, until that succeeds, every `period` (the controller may come late)."""
        timer = None

        def attempt() -> None:
            ok, reason = self.apply_all()
            if ok:
                timer.cancel()
                self.get_logger().info(f"serl compliance applied to {self.controller}")
            else:
                self.get_logger().warn(f"serl compliance not applied to {self.controller} yet: {reason}", once=True)

        timer = self.create_timer(period, attempt, callback_group=MutuallyExclusiveCallbackGroup())
        attempt()

    def _controller_ranges(self) -> dict[str, tuple[float, float] | None]:
        if self._ranges is None:
            names = sorted({t for targets in self.mapping.values() for t in targets})

            self._controller_params.wait_for_services(timeout_sec=DISCOVERY_WAIT)

            async def call():
                return await self._controller_params.describe_parameters(names)

            ranges: dict[str, tuple[float, float] | None] = {}
            try:
                described = self._calls.run(call, 5.0, f"{self.controller}/describe_parameters")
                for d in described.descriptors:
                    r = d.floating_point_range
                    ranges[d.name] = (r[0].from_value, r[0].to_value) if r else None
            except TimeoutError:
                return {}  # try again next time; the controller's own checks still apply
            self._ranges = ranges
        return self._ranges

    def _on_set(self, parameters: list[Parameter]) -> SetParametersResult:
        changed = {p.name for p in parameters if p.name in compliance.SERL_DEFAULTS}
        if not changed:
            return SetParametersResult(successful=True)
        values = self.serl_values()
        values.update({p.name: float(p.value) for p in parameters if p.name in changed})
        ok, reason = self.apply(values, changed)
        return SetParametersResult(successful=ok, reason=reason)

    # ---------------------------------------------------------------- target and switching
    def _on_pose(self, msg: PoseStamped) -> None:
        o = msg.pose.orientation
        quat = np.array([o.x, o.y, o.z, o.w])
        position = np.array([msg.pose.position.x, msg.pose.position.y, msg.pose.position.z])
        norm = np.linalg.norm(quat)
        if not (np.all(np.isfinite(position)) and np.isfinite(norm) and norm > 1e-9):
            self.get_logger().warn("equilibrium_pose with a non-finite position or a zero quaternion ignored")
            return
        o.x, o.y, o.z, o.w = (float(v) for v in quat / norm)
        if self._frame:
            msg.header.frame_id = self._frame
        self._target.publish(msg)

    def _switch_service(self, active: bool, response):
        try:
            response.success, response.message = self.switch.set_active(active)
        except TimeoutError as exc:
            response.success, response.message = False, str(exc)
        if response.success:
            with self.status.lock:
                self.status.stopped_on_request = not active
        return response

    def _on_start(self, request, response):
        return self._switch_service(True, response)

    def _on_stop(self, request, response):
        return self._switch_service(False, response)


class ControlNode(Node):
    """franka_control: error recovery, joint reset and the declared load, over franka_hardware's servers."""

    def __init__(self, status: Status, calls: Calls, impedance: ImpedanceNode, franka, **kwargs) -> None:
        super().__init__("franka_control", **kwargs)
        self.status, self._calls, self._impedance, self._franka = status, calls, impedance, franka
        self.declare_parameter(
            "reset_joint_target",
            DEFAULT_RESET_TARGET,
            ParameterDescriptor(description="joint angles of /jointreset [rad]", read_only=True),
        )
        self.declare_parameter(
            "joint_reset_velocity",
            0.3,
            ParameterDescriptor(description="largest joint speed of the joint reset [rad/s]", read_only=True),
        )
        self.declare_parameter("load_mass", 0.0, ParameterDescriptor(description="declared load (set_load) [kg]"))
        self.declare_parameter(
            "load_center_of_mass", [0.0] * 3, ParameterDescriptor(description="its centre of mass, flange frame [m]")
        )
        self.declare_parameter(
            "load_inertia", [0.0] * 9, ParameterDescriptor(description="its inertia tensor, row-major [kg m^2]")
        )
        target = np.asarray(self.get_parameter("reset_joint_target").value, dtype=float)
        if target.shape != (7,) or not np.all(np.isfinite(target)):
            raise ValueError(f"reset_joint_target must be 7 finite joint angles, got {target.tolist()}")
        self._reset_target = target
        node = calls.node
        self._recovery = ActionClient(node, franka.ErrorRecovery, RECOVERY)
        self._ptp = ActionClient(node, franka.PTPMotion, PTP_MOTION) if franka.PTPMotion else None
        self._set_load = node.create_client(franka.SetLoad, SET_LOAD)
        services = ReentrantCallbackGroup()
        self.create_service(Trigger, "~/error_recovery", self._on_error_recovery, callback_group=services)
        self.create_service(Trigger, "~/joint_reset", self._on_joint_reset, callback_group=services)
        self.add_on_set_parameters_callback(self._on_set)

    def _on_error_recovery(self, request, response):
        try:
            ok, _ = self._calls.action(self._recovery, RECOVERY, self._franka.ErrorRecovery.Goal(), 10.0)
            if not ok:
                response.success, response.message = False, "franka_hardware's error recovery failed (see its log)"
                return response
            with self.status.lock:
                restart = not self.status.stopped_on_request
            if restart and not self._impedance.switch.is_active():  # a reflex switches the controller off
                ok, message = self._impedance.switch.set_active(True)
                response.success, response.message = ok, f"recovered; {message}"
                return response
            response.success, response.message = True, "recovered"
        except TimeoutError as exc:
            response.success, response.message = False, str(exc)
        return response

    def _on_joint_reset(self, request, response):
        if self._ptp is None:
            response.success = False
            response.message = (
                "this franka_ros2 has no franka_msgs/action/PTPMotion (franka_ros2 >= 2.2): the arm did not move"
            )
            return response
        goal = self._franka.PTPMotion.Goal()
        goal.goal_joint_configuration = self._reset_target.tolist()
        goal.maximum_joint_velocities = [float(self.get_parameter("joint_reset_velocity").value)] * 7
        goal.goal_tolerance = 0.01
        with self.status.lock:
            self.status.joint_reset = True
        try:
            ok, message = self._impedance.switch.set_active(False)
            if ok:
                ok, result = self._calls.action(self._ptp, PTP_MOTION, goal, 60.0)
                message = "at the reset target" if ok else f"PTP motion failed: {getattr(result, 'error_message', '')}"
        except TimeoutError as exc:
            ok, message = False, str(exc)
        finally:
            with self.status.lock:
                self.status.joint_reset = False
        try:  # the original restarts impedance control after the reset, whatever happened
            self._impedance.switch.set_active(True)
        except TimeoutError as exc:
            ok, message = False, f"{message}; {exc}"
        response.success, response.message = ok, message
        return response

    def _on_set(self, parameters: list[Parameter]) -> SetParametersResult:
        load = {p.name: p.value for p in parameters if p.name.startswith("load_")}
        if not load:
            return SetParametersResult(successful=True)
        request = self._franka.SetLoad.Request()
        request.mass = float(load.get("load_mass", self.get_parameter("load_mass").value))
        request.center_of_mass = [
            float(v) for v in load.get("load_center_of_mass", self.get_parameter("load_center_of_mass").value)
        ]
        request.load_inertia = [float(v) for v in load.get("load_inertia", self.get_parameter("load_inertia").value)]
        try:
            result = self._calls.service(self._set_load, request, 5.0)
        except TimeoutError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=bool(result.success), reason=result.error)


class FrankaHandBridge(Node):
    """serl_gripper for the Franka hand: ~/gripper_action (GripperCommand) -> franka_gripper move / grasp."""

    def __init__(self, calls: Calls, franka, **kwargs) -> None:
        super().__init__("serl_gripper", **kwargs)
        self._calls, self._franka = calls, franka
        read_only = lambda text: ParameterDescriptor(description=text, read_only=True)  # noqa: E731
        self.declare_parameter("speed", 0.1, read_only("finger speed of moves and grasps [m/s]"))
        self.declare_parameter("max_width", gripper.HAND_MAX_WIDTH, read_only("widest opening [m]"))
        self.declare_parameter("grasp_epsilon", 1.0, read_only("grasp tolerance, inner and outer [m] (original: 1)"))
        self.declare_parameter("gripper_node", "franka_gripper", read_only("franka_gripper's node"))
        gripper_node = self.get_parameter("gripper_node").value
        self._names = {"move": f"{gripper_node}/move", "grasp": f"{gripper_node}/grasp"}
        self._move = ActionClient(calls.node, franka.Move, self._names["move"])
        self._grasp = ActionClient(calls.node, franka.Grasp, self._names["grasp"])
        self.commands = gripper.LatestCommand()
        self._outcomes: dict[int, tuple[bool, str]] = {}  # number -> (reached, why) once resolved
        self._resolved = threading.Condition()
        ActionServer(
            self,
            GripperCommand,
            "~/gripper_action",
            execute_callback=self._execute,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            cancel_callback=lambda handle: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
        )
        self._worker = threading.Thread(target=self._run, name="franka-hand", daemon=True)
        self._worker.start()

    def destroy_node(self) -> None:
        self.commands.close()
        self._worker.join(5.0)
        super().destroy_node()

    def _execute(self, handle):
        goal = handle.request.command
        result = GripperCommand.Result()
        try:
            command = gripper.hand_command(
                goal.position,
                goal.max_effort,
                self.get_parameter("speed").value,
                self.get_parameter("max_width").value,
                self.get_parameter("grasp_epsilon").value,
            )
        except ValueError as exc:
            self.get_logger().warn(f"gripper goal refused: {exc}")
            handle.abort()
            return result
        number, replaced = self.commands.put(command)
        if replaced is not None:  # its execute callback ends now: at most two ever wait (running and newest)
            self._resolve(replaced, (False, "replaced by a newer goal"))
        with self._resolved:
            self._resolved.wait_for(lambda: number in self._outcomes or not rclpy.ok(context=self.context), 60.0)
            ok, _ = self._outcomes.pop(number, (False, "not run"))
        result.reached_goal = ok
        if ok:
            handle.succeed()
        else:
            handle.abort()
        return result

    def _resolve(self, number: int, outcome: tuple[bool, str]) -> None:
        with self._resolved:
            self._outcomes[number] = outcome
            self._resolved.notify_all()

    def _run(self) -> None:
        while True:
            taken = self.commands.take(timeout=1.0)
            if taken is None:
                if self.commands.closed or not rclpy.ok(context=self.context):
                    return
                continue
            number, command = taken
            try:
                outcome = self._send(command)
            except TimeoutError as exc:
                outcome = (False, str(exc))
            if not outcome[0]:
                self.get_logger().warn(f"gripper {command.kind} to {command.width:.3f} m: {outcome[1]}")
            self._resolve(number, outcome)

    def _send(self, command: gripper.HandCommand) -> tuple[bool, str]:
        if command.kind == "grasp":
            goal = self._franka.Grasp.Goal()
            goal.width, goal.speed, goal.force = command.width, command.speed, command.force
            goal.epsilon.inner, goal.epsilon.outer = command.epsilon_inner, command.epsilon_outer
            ok, result = self._calls.action(self._grasp, self._names["grasp"], goal, 30.0)
        else:
            goal = self._franka.Move.Goal()
            goal.width, goal.speed = command.width, command.speed
            ok, result = self._calls.action(self._move, self._names["move"], goal, 30.0)
        return ok and bool(getattr(result, "success", False)), getattr(result, "error", "") or "rejected"


class GripperStateRelay(Node):
    """serl_gripper for a Robotiq: its driver's joint state of the knuckle joint as franka_gripper/joint_states."""

    def __init__(self, **kwargs) -> None:
        super().__init__("serl_gripper", **kwargs)
        read_only = lambda text: ParameterDescriptor(description=text, read_only=True)  # noqa: E731
        self.declare_parameter("source_topic", "joint_states", read_only("JointState topic of the gripper driver"))
        self.declare_parameter(
            "joint", "robotiq_85_left_knuckle_joint", read_only("the joint: 0 open .. 0.8 rad closed")
        )
        self._joint = self.get_parameter("joint").value
        self._publisher = self.create_publisher(JointState, "franka_gripper/joint_states", QoSProfile(depth=10))
        self.create_subscription(
            JointState, self.get_parameter("source_topic").value, self._on_joints, QoSProfile(depth=10)
        )

    def _on_joints(self, msg: JointState) -> None:
        if self._joint not in msg.name:
            return
        i = list(msg.name).index(self._joint)
        out = JointState()
        out.header = msg.header
        out.name = [self._joint]
        out.position = [msg.position[i]] if len(msg.position) > i else []
        out.velocity = [msg.velocity[i]] if len(msg.velocity) > i else []
        out.effort = [msg.effort[i]] if len(msg.effort) > i else []
        self._publisher.publish(out)


def wait_for_callbacks(executor) -> None:
    """Let the callbacks a MultiThreadedExecutor has handed to its threads finish: its shutdown() does not wait
    for them (Jazzy's rclpy), and one still running when its node is destroyed fails on a destroyed handle."""
    pool = getattr(executor, "_executor", None)
    if pool is not None:
        pool.shutdown(wait=True)


def build_nodes(franka, gripper_type: str, namespace: str = "", context=None):
    """The adapter's nodes (franka: load_franka_messages()); (nodes, calls, impedance)."""
    status = Status()
    calls = Calls(namespace, context=context)
    kwargs = {"namespace": namespace, "context": context}
    state_node = StateNode(status, franka.FrankaRobotState, **kwargs)
    impedance = ImpedanceNode(status, calls, **kwargs)
    control = ControlNode(status, calls, impedance, franka, **kwargs)
    nodes = [state_node, impedance, control]
    if gripper_type == "Franka":
        nodes.append(FrankaHandBridge(calls, franka, **kwargs))
    elif gripper_type == "Robotiq":
        nodes.append(GripperStateRelay(**kwargs))
    return nodes, calls, impedance


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    stop_with_parent()
    log = rclpy.logging.get_logger("real_state_adapter")
    try:
        franka = load_franka_messages()
    except ImportError as exc:
        log.fatal(
            f"cannot start: franka_msgs is not importable ({exc}); source the workspace where franka_ros2 is "
            "built (docs/real_robot.md)"
        )
        rclpy.try_shutdown()
        raise SystemExit(1) from None
    probe = Node("real_state_adapter_arguments")  # reads the process's own arguments: gripper type
    probe.declare_parameter("gripper_type", "Franka", ParameterDescriptor(read_only=True))
    gripper_type = probe.get_parameter("gripper_type").value
    namespace = probe.get_namespace()
    probe.destroy_node()
    try:
        if gripper_type not in ("Franka", "Robotiq", "None"):
            raise ValueError(f"gripper_type {gripper_type!r} must be Franka, Robotiq or None")
        nodes, calls, impedance = build_nodes(franka, gripper_type, namespace)
    except (ValueError, ParameterException) as exc:
        log.fatal(f"cannot start: {exc}")
        rclpy.try_shutdown()
        raise SystemExit(1) from None
    executor = MultiThreadedExecutor(num_threads=6)  # blocking service callbacks and gripper goals: threads to spare
    for node in nodes:
        executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, name="adapter", daemon=True)
    spinner.start()
    log.info(f"serving the contract's interfaces over franka_ros2 and {impedance.controller}")
    impedance.keep_applying()
    try:
        while spinner.is_alive():
            spinner.join(0.5)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        ignore_stop_signals()
        executor.shutdown()
        spinner.join(5.0)
        wait_for_callbacks(executor)
        calls.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
