"""The sim bridge process: the simulated robot's ROS 2 graph, as the real Franka stack lays it out.

One process, one simulation loop, and the nodes of the real stack around it:
  /franka_sim                        the simulator: backend, pacing, /clock, /joint_states, /diagnostics
  /franka_control                    error recovery and joint reset services
  /franka_state_controller           joint_states, O_T_EE, O_dP_EE, K_F_ext_hat_K
  /cartesian_impedance_controller    compliance parameters, equilibrium_pose, franka_jacobian, start/stop
  /franka_gripper                    gripper_action (control_msgs/GripperCommand), joint_states
Every name is relative, so a launch-file namespace (/left, /right) moves the whole robot.
These nodes only translate: the physics is in backends/, the control law in controller/.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import threading
import time

import numpy as np
import rclpy
from control_msgs.action import GripperCommand
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy._rclpy_pybind11 import RCLError
from rclpy.action import ActionServer, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from ..backends import BACKENDS, create_backend
from ..controller import COMPLIANCE_PARAMETERS, CartesianImpedanceController
from ..controller.impedance import normalized_quaternion
from ..sim import reflexes
from ..sim.cameras import SharedState, load_cameras
from ..sim.loop import SimulationLoop
from ..sim.state import RobotSnapshot
from . import camera_process, parameters
from . import messages as msgs
from .parameters import GRIPPER_TYPES

GRIPPER_SETTLE_TIMEOUT = 3.0  # [s] a gripper goal ends when the fingers stop or after this long


class SimBridge:
    """Builds the nodes, the backend and the simulation loop, and wires them together."""

    def __init__(self) -> None:
        self.sim_node = Node("franka_sim")
        self.control_node = Node("franka_control")
        self.state_node = Node("franka_state_controller")
        self.impedance_node = Node("cartesian_impedance_controller")
        self.nodes = (self.sim_node, self.control_node, self.state_node, self.impedance_node)
        self.log = self.sim_node.get_logger()
        self._declare_parameters()
        self._latest: RobotSnapshot | None = None
        self._snapshot_event = threading.Condition()

        backend_name = self._param(self.sim_node, "backend")
        if backend_name not in BACKENDS:
            raise ValueError(f"parameter backend='{backend_name}' must be one of {BACKENDS}")
        gripper_type = self._param(self.sim_node, "gripper_type")
        if gripper_type not in GRIPPER_TYPES:
            raise ValueError(f"parameter gripper_type='{gripper_type}' must be one of {GRIPPER_TYPES}")
        # like the real stack, franka_gripper exists only when a gripper is mounted
        self.gripper_node = Node("franka_gripper") if gripper_type != "None" else None
        if self.gripper_node is not None:
            self.nodes += (self.gripper_node,)
        self.log.info(f"loading the '{backend_name}' backend (Franka Panda + {gripper_type} gripper)")
        t0 = time.perf_counter()
        cameras_config = self._param(self.sim_node, "cameras_config")
        self.cameras = load_cameras(cameras_config) if cameras_config else []
        self.backend = create_backend(backend_name, gripper=gripper_type, cameras=self.cameras)
        self.reset_joint_target = np.array(self._param(self.control_node, "reset_joint_target"), dtype=float)
        self.backend.set_arm_configuration(self.reset_joint_target)
        self.log.info(
            f"backend ready in {time.perf_counter() - t0:.2f} s (timestep {self.backend.timestep * 1e3:g} ms)"
        )

        self.controller = CartesianImpedanceController(
            {p.name: self._param(self.impedance_node, p.name) for p in COMPLIANCE_PARAMETERS}
        )
        self.loop = SimulationLoop(
            self.backend,
            self.controller,
            self._publish_snapshot,
            publish_rate=self._param(self.sim_node, "state_publish_rate"),
            real_time_factor=self._param(self.sim_node, "real_time_factor"),
        )
        self.base_frame = f"{self._param(self.sim_node, 'arm_id')}_link0"
        self.ee_frame = f"{self._param(self.sim_node, 'arm_id')}_EE"
        b = self.backend
        self.messages = msgs.StateMessages(
            self.base_frame, self.ee_frame, b.arm_joint_names, b.gripper_joint_names, b.joint_names, b.frame_names
        )
        state_rate = 1.0 / (self.loop.publish_every * self.loop.dt)
        self.joint_states_every = max(1, round(state_rate / self._param(self.sim_node, "joint_states_publish_rate")))
        self._snapshots_published = 0
        self._create_interfaces()
        self.camera_process = None
        self._camera_death_logged = False
        if self.cameras:
            self._create_camera_process()
        self._apply()

    # ------------------------------------------------------------------ parameters
    @staticmethod
    def _param(node: Node, name: str):
        return node.get_parameter(name).value

    def _declare_parameters(self) -> None:
        for node in self.nodes:
            parameters.declare(node, node.get_name())
        self.impedance_node.add_post_set_parameters_callback(self._on_compliance_set)
        self.sim_node.add_post_set_parameters_callback(lambda changes: self._apply())
        self.control_node.add_post_set_parameters_callback(lambda changes: self._apply())

    def _apply(self) -> None:
        """Hand the current values of the simulator's and robot's parameters to the simulation loop."""
        sim, control = self.sim_node, self.control_node
        p = self._param
        limits = reflexes.ReflexLimits(
            enabled=p(control, "reflex.enabled"),
            contact_force=p(control, "reflex.contact_force"),
            joint_position_margin=p(control, "reflex.joint_position_margin"),
            joint_velocity_scale=p(control, "reflex.joint_velocity_scale"),
            torque_scale=p(control, "reflex.torque_scale"),
            workspace_min=np.array(p(control, "reflex.workspace_min")),
            workspace_max=np.array(p(control, "reflex.workspace_max")),
        )
        declared = (p(control, "load_mass"), np.array(p(control, "load_center_of_mass")))
        payload = (
            p(sim, "payload_mass"),
            np.array(p(sim, "payload_center_of_mass")),
            np.array(p(sim, "payload_inertia")),
        )
        real_time_factor = p(sim, "real_time_factor")
        wrench_bias, wrench_noise_std = np.array(p(sim, "wrench_bias")), np.array(p(sim, "wrench_noise_std"))
        loop = self.loop

        def apply() -> None:
            loop.real_time_factor = real_time_factor
            loop.reflex_limits = limits
            loop.declared_load = declared
            if payload[0] != loop.payload[0] or not np.array_equal(payload[1], loop.payload[1]):
                loop.set_payload(*payload)
            loop.wrench_bias, loop.wrench_noise_std = wrench_bias, wrench_noise_std

        loop.submit(apply)

    def _on_compliance_set(self, params: list[Parameter]) -> None:
        updates = {p.name: float(p.value) for p in params}
        self.loop.submit(lambda: self.controller.set_params(updates))

    # ------------------------------------------------------------------ topics, services, actions
    def _create_interfaces(self) -> None:
        state_qos = QoSProfile(depth=10)
        s = self.state_node
        self.pub_joint_states = s.create_publisher(JointState, "~/joint_states", state_qos)
        self.pub_pose = s.create_publisher(PoseStamped, "~/O_T_EE", state_qos)
        self.pub_twist = s.create_publisher(TwistStamped, "~/O_dP_EE", state_qos)
        self.pub_wrench = s.create_publisher(WrenchStamped, "~/K_F_ext_hat_K", state_qos)
        self.pub_jacobian = self.impedance_node.create_publisher(Float64MultiArray, "~/franka_jacobian", state_qos)
        self.pub_all_joints = self.sim_node.create_publisher(JointState, "joint_states", state_qos)
        self.pub_clock = self.sim_node.create_publisher(Clock, "/clock", QoSProfile(depth=1))
        self.pub_tf = self.sim_node.create_publisher(TFMessage, "/tf", QoSProfile(depth=100))
        latched_static = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_tf_static = self.sim_node.create_publisher(TFMessage, "/tf_static", latched_static)
        description = self.backend.robot_description()
        if description is not None:
            self.pub_description = self.sim_node.create_publisher(String, "robot_description", latched_static)
            self.pub_description.publish(String(data=description))
        arm_id = self._param(self.sim_node, "arm_id")
        self.pub_tf_static.publish(
            TFMessage(transforms=[msgs.static_transform(f"{arm_id}_link8", self.ee_frame, *self.backend.flange_to_ee)])
        )
        self.pub_diagnostics = self.sim_node.create_publisher(DiagnosticArray, "/diagnostics", QoSProfile(depth=10))
        self.sim_node.create_timer(1.0, self._publish_diagnostics)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_mode = self.control_node.create_publisher(String, "~/robot_mode", latched)
        self._mode_text = ""

        command_qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.impedance_node.create_subscription(
            PoseStamped, "~/equilibrium_pose", self._on_equilibrium_pose, command_qos
        )
        self.sim_node.create_subscription(WrenchStamped, "sim/external_wrench", self._on_external_wrench, command_qos)

        blocking = ReentrantCallbackGroup()
        self.control_node.create_service(Trigger, "~/error_recovery", self._on_error_recovery)
        self.control_node.create_service(Trigger, "~/joint_reset", self._on_joint_reset, callback_group=blocking)
        self.impedance_node.create_service(Trigger, "~/start", self._on_start_impedance)
        self.impedance_node.create_service(Trigger, "~/stop", self._on_stop_impedance)
        self.pub_gripper = None
        self._gripper_lock, self._gripper_goal = threading.Lock(), 0
        if self.gripper_node is not None:
            self.pub_gripper = self.gripper_node.create_publisher(JointState, "~/joint_states", state_qos)
            self.gripper_action = ActionServer(
                self.gripper_node,
                GripperCommand,
                "~/gripper_action",
                execute_callback=self._execute_gripper,
                goal_callback=self._accept_gripper_goal,
                callback_group=blocking,
            )

    def _publish_snapshot(self, snap: RobotSnapshot) -> None:
        """Called by the simulation thread: every state topic of one tick carries the same stamp."""
        with self._snapshot_event:
            self._latest = snap
            self._snapshot_event.notify_all()
        try:
            self._publish_state_topics(snap)
        except RCLError:
            if self.sim_node.context.ok():
                raise  # a real publishing failure; at shutdown the context is gone and that is fine

    def _publish_state_topics(self, snap: RobotSnapshot) -> None:
        arm = self.messages.arm(snap)
        self.pub_jacobian.publish(arm.jacobian)
        self.pub_pose.publish(arm.pose)
        self.pub_twist.publish(arm.twist)
        self.pub_wrench.publish(arm.wrench)
        self.pub_joint_states.publish(arm.joints)
        self.pub_clock.publish(arm.clock)
        self._publish_robot_mode()
        self._snapshots_published += 1
        if self._snapshots_published % self.joint_states_every == 0:
            joints = self.messages.joint_states(snap)
            if self.pub_gripper is not None:
                self.pub_gripper.publish(joints.gripper)
            self.pub_all_joints.publish(joints.all_joints)
            self.pub_tf.publish(joints.tf)

    def robot_mode_text(self) -> str:
        """`impedance`, `idle`, `joint_reset`, or `reflex: <why>`."""
        reflex = self.loop.reflex
        return f"reflex: {reflex}" if reflex else self.loop.mode.value

    def _create_camera_process(self) -> None:
        """Cameras render in a process of their own, from the state this process shares with it."""
        divisor = max(1, int(self._param(self.sim_node, "camera_render_divisor")))
        factory = self.backend.camera_renderer_factory(divisor)
        size = len(self.backend.render_state())
        self.camera_state = SharedState(size)
        self.camera_process = multiprocessing.get_context("spawn").Process(
            target=camera_process.main,
            args=(self.camera_state.name, size, factory, self.cameras, self.sim_node.get_namespace(), os.getpid()),
            name="franka_sim_cameras",
            daemon=True,
        )

    def _publish_robot_mode(self) -> None:
        """On change only (checked at every state tick, from the simulation thread)."""
        text = self.robot_mode_text()
        if text != self._mode_text:
            self._mode_text = text
            self.pub_mode.publish(String(data=text))

    def _publish_diagnostics(self) -> None:
        durations = np.array(self.loop.tick_durations) * 1e6
        p50, p99 = np.percentile(durations, [50, 99]) if durations.size else (0.0, 0.0)
        alive, reflex = self.loop.running, self.loop.reflex
        if not alive:
            level, message = DiagnosticStatus.ERROR, "simulation loop stopped"
        elif reflex:
            level, message = DiagnosticStatus.ERROR, f"reflex: {reflex} (call error recovery)"
        else:
            level, message = DiagnosticStatus.OK, f"running, mode {self.loop.mode.value}"
        status = DiagnosticStatus(
            level=level,
            name=f"{self.sim_node.get_fully_qualified_name()}: simulation",
            hardware_id=f"simulated Franka ({self._param(self.sim_node, 'backend')})",
            message=message,
            values=[
                KeyValue(key="robot_mode", value=self.loop.mode.value),
                KeyValue(key="active_errors", value=reflex or ""),
                KeyValue(key="sim_time", value=f"{self.loop.sim_time:.3f}"),
                KeyValue(key="real_time_factor", value=f"{self.loop.measured_rtf:.3f}"),
                KeyValue(key="target_real_time_factor", value=f"{self.loop.real_time_factor:g}"),
                KeyValue(key="tick_us_p50", value=f"{p50:.0f}"),
                KeyValue(key="tick_us_p99", value=f"{p99:.0f}"),
            ],
        )
        msg = DiagnosticArray(status=[status, *self._camera_process_status()])
        msg.header.stamp = self.sim_node.get_clock().now().to_msg()
        self.pub_diagnostics.publish(msg)

    def _camera_process_status(self) -> list[DiagnosticStatus]:
        """The rendering process reports its cameras itself; here only whether it is alive."""
        if self.camera_process is None or self.camera_process.exitcode is None:  # none, or not ended
            return []
        message = f"camera process exited (code {self.camera_process.exitcode}): no frames; see its log above"
        if not self._camera_death_logged:
            self._camera_death_logged = True
            self.sim_node.get_logger().error(message)
        name = f"{self.sim_node.get_fully_qualified_name()}: cameras"
        return [DiagnosticStatus(level=DiagnosticStatus.ERROR, name=name, message=message)]

    def _on_equilibrium_pose(self, msg: PoseStamped) -> None:
        position, quat = msgs.pose_from_msg(msg)
        frame = msg.header.frame_id
        if frame not in ("", self.base_frame):
            self.impedance_node.get_logger().warn(
                f"equilibrium_pose ignored: frame '{frame}' is not the base frame '{self.base_frame}'",
                throttle_duration_sec=1.0,
            )
            return
        try:
            quat = normalized_quaternion(quat)
            if not np.all(np.isfinite(position)):
                raise ValueError(f"position must be finite, got {position.tolist()}")
        except ValueError as exc:
            self.impedance_node.get_logger().warn(f"equilibrium_pose ignored: {exc}", throttle_duration_sec=1.0)
            return
        self.loop.submit(lambda: self.controller.set_target(position, quat))

    def _on_external_wrench(self, msg: WrenchStamped) -> None:
        wrench = msgs.wrench_from_msg(msg)
        if not np.all(np.isfinite(wrench)):
            self.sim_node.get_logger().warn("external wrench ignored: non-finite values")
            return
        self.loop.submit(lambda: self.backend.set_external_wrench(wrench))

    def _on_error_recovery(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = True, self.loop.call(self.loop.recover)
        return response

    def _on_joint_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        target = np.array(self._param(self.control_node, "reset_joint_target"), dtype=float)
        self.control_node.get_logger().info(f"joint reset to {target.round(3).tolist()}")
        try:
            done = self.loop.call(lambda: self.loop.begin_joint_reset(target))
        except RuntimeError as exc:  # in a reflex: the robot refuses until error recovery
            response.success, response.message = False, str(exc)
            return response
        try:
            reached = done.result(timeout=35.0)
        except TimeoutError:
            reached = False
        response.success = bool(reached)
        if reached:
            response.message = "at the reset joint target"
        elif self.loop.reflex is not None:
            response.message = f"joint reset stopped by a reflex: {self.loop.reflex}"
        else:
            response.message = "joint reset timed out before the target"
        return response

    def _on_start_impedance(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        try:
            self.loop.call(self.loop.start_impedance)
        except RuntimeError as exc:  # in a reflex: the robot refuses until error recovery
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, "impedance controller started"
        return response

    def _on_stop_impedance(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.loop.call(self.loop.stop_impedance)
        response.success, response.message = True, "impedance controller stopped"
        return response

    def _accept_gripper_goal(self, goal: GripperCommand.Goal) -> GoalResponse:
        c = goal.command
        return GoalResponse.ACCEPT if math.isfinite(c.position) and math.isfinite(c.max_effort) else GoalResponse.REJECT

    def _execute_gripper(self, goal_handle) -> GripperCommand.Result:
        """Drive the fingers and answer once they stop; a newer goal preempts this one (as a gripper
        action controller does), so rapid commands never pile up waiting goals in the executor."""
        command = goal_handle.request.command
        with self._gripper_lock:
            self._gripper_goal += 1
            mine = self._gripper_goal
        self.loop.call(lambda: self.backend.command_gripper(command.position, command.max_effort))
        deadline = time.monotonic() + GRIPPER_SETTLE_TIMEOUT
        previous, still_since = None, time.monotonic()
        position = float("nan")
        while time.monotonic() < deadline:
            time.sleep(0.02)
            position = float(self._latest.gripper_positions[0])
            if self._gripper_goal != mine:  # preempted by a newer goal
                goal_handle.abort()
                return GripperCommand.Result(position=position, effort=0.0, stalled=False, reached_goal=False)
            if previous is None or abs(position - previous) > 1e-4:
                still_since = time.monotonic()
            previous = position
            if time.monotonic() - still_since > 0.2:
                break
        reached = abs(position - command.position) < 0.02
        goal_handle.succeed()
        return GripperCommand.Result(position=position, effort=0.0, stalled=not reached, reached_goal=reached)

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        self.loop.start_impedance()
        if self.camera_process is not None:
            self.loop.render_sink = self.camera_state.write
            self.camera_process.start()
        self.loop.start()
        if self.camera_process is not None:
            self.log.info(
                "cameras: "
                + ", ".join(f"{c.name} ({c.serial_number}, {c.width}x{c.height} @ {c.fps:g} fps)" for c in self.cameras)
            )
        with self._snapshot_event:
            self._snapshot_event.wait_for(lambda: self._latest is not None, timeout=5.0)
        self.log.info(
            f"simulation running at real-time factor {self.loop.real_time_factor:g}, "
            f"state topics at {1.0 / (self.loop.publish_every * self.loop.dt):g} Hz"
        )

    def shutdown(self) -> None:
        self.loop.stop()
        if self.camera_process is not None:
            self.camera_process.join(timeout=3.0)
            if self.camera_process.is_alive():
                self.camera_process.terminate()
            self.camera_state.close(unlink=True)
        self.backend.close()
        for node in self.nodes:
            node.destroy_node()


GIL_SWITCH_INTERVAL = 0.0005  # [s]


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)  # Ctrl-C / SIGTERM shut the context down and end executor.spin()
    # hand the GIL between threads every 0.5 ms, not 5 ms: requests and commands wait on it
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    bridge = None
    try:
        try:
            bridge = SimBridge()
        except (ValueError, OSError) as exc:  # a bad parameter, launch argument or camera file: say which
            rclpy.logging.get_logger("franka_sim").fatal(f"cannot start: {exc}")
            raise SystemExit(1) from None
        executor = MultiThreadedExecutor(num_threads=4)
        for node in bridge.nodes:
            executor.add_node(node)
        bridge.start()
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if bridge is not None:
            bridge.shutdown()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
