"""The simulation process: a world of simulated Frankas, each with the ROS 2 graph of the real stack.

  /franka_sim          the world: backend, pacing, /clock, /tf, /tf_static, /diagnostics, cameras
  <ns>/...             per robot, the nodes of ros/robot_nodes.py (franka_control,
                       franka_state_controller, cartesian_impedance_controller, franka_gripper, sim)
`compose` builds the world, its robots and their nodes in one order; `main` runs it. These nodes
only translate: the physics is in backends/, the control law in controller/, the loop in sim/.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal
import sys
import threading
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy._rclpy_pybind11 import RCLError
from rclpy.executors import Executor, ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.signals import SignalHandlerOptions
from rosgraph_msgs.msg import Clock
from scipy.spatial.transform import Rotation
from tf2_msgs.msg import TFMessage

from franka_server_ros2.process import ignore_stop_signals, make_executor, stop_with_parent

from ..backends import PhysicsWorld, check_backend, create_world
from ..controller import CartesianImpedanceController, CartesianWrenchController
from ..sim.cameras import SharedState
from ..sim.loop import SimulationLoop
from ..sim.state import RobotSnapshot
from ..world import DEFAULT_TASK, WorldSpec, load_world
from . import camera_process, parameters
from . import messages as msgs
from .listened import ListenedPublisher
from .robot_nodes import LATCHED, RobotNodes
from .task_publisher import TaskPublisher

WORLD_FRAME = "world"
CONTROLLERS = {"impedance": CartesianImpedanceController, "wrench": CartesianWrenchController}
GIL_SWITCH_INTERVAL = 0.0005  # [s]
STOP_CHECK_S = 0.1  # [s] longest the main thread waits before it looks whether it was asked to stop
CLEANUP_REPORT_S = 4.0  # [s] a clean-up still running after this prints every thread's stack (launch escalates at 5 s)


def default_world_file() -> str:
    from ament_index_python.packages import get_package_share_directory

    return os.path.join(get_package_share_directory("isaac_franka_bridge"), "config", "tasks", f"{DEFAULT_TASK}.yaml")


class WorldNode(Node):
    """/franka_sim: the world's parameters and what the world publishes for all its robots."""

    def __init__(self) -> None:
        super().__init__("franka_sim", namespace="/")
        parameters.declare(self, "franka_sim")
        self.clock = ListenedPublisher(self, Clock, "/clock", QoSProfile(depth=1))
        self.tf = ListenedPublisher(self, TFMessage, "/tf", QoSProfile(depth=100))
        self.tf_static = self.create_publisher(TFMessage, "/tf_static", LATCHED)
        self.diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", QoSProfile(depth=10))
        self.add_post_set_parameters_callback(self._on_set)
        self.loop: SimulationLoop | None = None

    def value(self, name: str):
        return self.get_parameter(name).value

    def _on_set(self, changes) -> None:
        if self.loop is not None:
            self.loop.set_pace(self.value("real_time_factor"))


class SimulationProcess:
    """A world, its loop, the world node and every robot's nodes, built by `compose`."""

    def __init__(self, world_node: WorldNode, spec: WorldSpec, world: PhysicsWorld, loop: SimulationLoop) -> None:
        self.world_node, self.spec, self.world, self.loop = world_node, spec, world, loop
        self.log = world_node.get_logger()
        self.robots = [RobotNodes(r, loop, c) for r, c in zip(spec.robots, loop.robots, strict=True)]
        for nodes in self.robots:  # the compliance parameters as the nodes hold them (files, overrides)
            if nodes.impedance_node is None:
                continue
            compliance = nodes.impedance_node.compliance()
            loop.submit(lambda c=nodes.control.controller, v=compliance: c.set_params(v))
        self.nodes: list[Node] = [world_node] + [n for r in self.robots for n in r.nodes]
        # nodes whose callbacks wait for seconds: a thread pool runs them (the others: one events executor,
        # whose wake-ups cost no Python wait set, so that a command reaches its controller within a tick)
        self.waiting_nodes: list[Node] = [n for r in self.robots for n in r.waiting_nodes]
        state_rate = 1.0 / (loop.publish_every * loop.dt)
        self.joints_every = max(1, round(state_rate / world_node.value("joint_states_publish_rate")))
        self._published = 0
        # the world's own frames (objects, fixed cameras) on /tf, if it has any
        self._world_tf = msgs.tf_template(WORLD_FRAME, world.frame_names) if world.frame_names else None
        self._first_snapshot = False
        self._publish_static_frames()
        self.camera_process: multiprocessing.Process | None = None
        self._camera_death_logged = False
        cameras = getattr(world, "cameras", ())
        if cameras:
            self._create_camera_process(cameras)
        self.task = TaskPublisher(world_node, spec, world, loop, world_node.value("task_rate"))
        world_node.create_timer(1.0, self._publish_diagnostics)
        loop.on_snapshot = self._publish

    def _publish_static_frames(self) -> None:
        frames = []
        for robot, nodes in zip(self.spec.robots, self.robots, strict=True):
            base = np.array(robot.base_position), Rotation.from_euler("z", robot.base_yaw).as_matrix()
            frames.append(msgs.static_transform(WORLD_FRAME, robot.base_frame, *base))
            flange_to_ee = nodes.control.body.flange_to_ee
            frames.append(msgs.static_transform(f"{robot.prefix}panda_link8", f"{robot.prefix}panda_EE", *flange_to_ee))
        self.world_node.tf_static.publish(TFMessage(transforms=frames))

    def _publish(self, sim_time: float, snapshots: list[RobotSnapshot]) -> None:
        """Called by the simulation thread: every topic of one tick carries the same stamp. A topic nobody
        subscribes to is skipped (listened.py): unread, it would cost as much as a read one."""
        try:
            stamp = msgs.split_stamp(sim_time)
            for nodes, snap in zip(self.robots, snapshots, strict=True):
                nodes.publish_arm(stamp, snap)
            self._published += 1
            if self._published % self.joints_every == 0:
                node = self.world_node
                # /clock with /tf: every node on simulated time (the servers, RViz, tools) runs a Python
                # callback per /clock message, so it comes at the TF rate, and now() matches the newest TF
                if node.clock.listened:
                    node.clock.publish(self.robots[0].messages.clock(stamp))
                tf = node.tf.listened
                for nodes, snap in zip(self.robots, snapshots, strict=True):
                    robot_tf = nodes.publish_joints(stamp, snap, tf)
                    if robot_tf is not None:
                        node.tf.publish(robot_tf)
                if tf and self._world_tf is not None:
                    positions, quats = self.world.frame_poses()
                    node.tf.publish(self._world_tf.serialize(*stamp, np.hstack((positions, quats)).ravel()))
            self._first_snapshot = True
        except RCLError:
            if self.world_node.context.ok():
                raise  # a real publishing failure; at shutdown the context is gone and that is fine

    def _create_camera_process(self, cameras) -> None:
        """Cameras render in a process of their own, from the state this process shares with it."""
        divisor = max(1, int(self.world_node.value("camera_render_divisor")))
        factory = self.world.camera_renderer_factory(divisor)
        size = len(self.world.render_state())
        self.camera_state = SharedState(size)
        self.cameras = cameras
        self.camera_process = multiprocessing.get_context("spawn").Process(
            target=camera_process.main,
            args=(self.camera_state.name, size, factory, list(cameras), "/", os.getpid()),
            name="franka_sim_cameras",
            daemon=True,
        )

    def _publish_diagnostics(self) -> None:
        loop = self.loop
        durations = np.array(loop.tick_durations) * 1e6
        p50, p99 = np.percentile(durations, [50, 99]) if durations.size else (0.0, 0.0)
        name = self.world_node.get_fully_qualified_name()
        ok = loop.running
        status = DiagnosticStatus(
            level=DiagnosticStatus.OK if ok else DiagnosticStatus.ERROR,
            name=f"{name}: simulation",
            hardware_id=f"simulated world ({self.world_node.value('backend')}, {len(self.robots)} robot(s))",
            message=f"running {len(self.robots)} robot(s)" if ok else "simulation loop stopped",
            values=[
                KeyValue(key="sim_time", value=f"{loop.sim_time:.3f}"),
                KeyValue(key="real_time_factor", value=f"{loop.measured_rtf:.3f}"),
                KeyValue(key="target_real_time_factor", value=f"{loop.real_time_factor:g}"),
                KeyValue(key="tick_us_p50", value=f"{p50:.0f}"),
                KeyValue(key="tick_us_p99", value=f"{p99:.0f}"),
            ],
        )
        task_status = self.task.diagnostic_status()
        task_status.name = f"{name}: task {task_status.name}"
        statuses = [status, task_status] + [self._robot_status(nodes, ok) for nodes in self.robots]
        msg = DiagnosticArray(status=statuses + self._camera_process_status())
        msg.header.stamp = self.world_node.get_clock().now().to_msg()
        self.world_node.diagnostics.publish(msg)

    @staticmethod
    def _robot_status(nodes: RobotNodes, alive: bool) -> DiagnosticStatus:
        control = nodes.control
        if not alive:
            level, message = DiagnosticStatus.ERROR, "simulation loop stopped"
        elif control.reflex:
            level, message = DiagnosticStatus.ERROR, f"reflex: {control.reflex} (call error recovery)"
        else:
            level, message = DiagnosticStatus.OK, f"running, mode {control.mode.value}"
        return DiagnosticStatus(
            level=level,
            name=f"{nodes.control_node.get_namespace().rstrip('/')}/franka_sim: robot",
            hardware_id=f"simulated Franka + {nodes.robot.gripper_type} gripper",
            message=message,
            values=[
                KeyValue(key="robot_mode", value=control.mode.value),
                KeyValue(key="active_errors", value=control.reflex or ""),
            ],
        )

    def _camera_process_status(self) -> list[DiagnosticStatus]:
        """The rendering process reports its cameras itself; here only whether it is alive."""
        if self.camera_process is None or self.camera_process.exitcode is None:  # none, or not ended
            return []
        message = f"camera process exited (code {self.camera_process.exitcode}): no frames; see its log above"
        if not self._camera_death_logged:
            self._camera_death_logged = True
            self.log.error(message)
        name = f"{self.world_node.get_fully_qualified_name()}: cameras"
        return [DiagnosticStatus(level=DiagnosticStatus.ERROR, name=name, message=message)]

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        for nodes in self.robots:
            self.loop.submit(nodes.control.start_controller)
        if self.camera_process is not None:
            self.loop.render_sink = self.camera_state.write
            self.camera_process.start()
        self.loop.start()
        if self.camera_process is not None:
            self.log.info(
                "cameras: "
                + ", ".join(f"{c.name} ({c.serial_number}, {c.width}x{c.height} @ {c.fps:g} fps)" for c in self.cameras)
            )
        deadline = time.monotonic() + 5.0
        while not self._first_snapshot and time.monotonic() < deadline and self.loop.running:
            time.sleep(0.01)
        robots = ", ".join(f"{r.namespace or '/'} ({r.gripper_type})" for r in self.spec.robots)
        self.log.info(
            f"simulation running at real-time factor {self.loop.real_time_factor:g}, "
            f"state topics at {1.0 / (self.loop.publish_every * self.loop.dt):g} Hz, robots: {robots}"
        )

    def shutdown(self) -> None:
        self.loop.stop()
        if self.camera_process is not None:
            if self.camera_process.pid is not None:
                self.camera_process.join(timeout=3.0)
                if self.camera_process.is_alive():
                    self.camera_process.terminate()
            self.camera_state.close(unlink=True)
        self.world.close()
        for node in self.nodes:
            node.destroy_node()


def compose() -> SimulationProcess:
    """The world node, the world from its file, the backend, the loop, then each robot's nodes.
    ValueError or OSError (a bad parameter, world or camera file) before anything heavy loads."""
    world_node = WorldNode()
    log = world_node.get_logger()
    try:
        path = world_node.value("world_config") or default_world_file()
        spec = load_world(path)
        backend = world_node.value("backend")
        check_backend(backend, spec)
        log.info(
            f"loading the '{backend}' backend: world {os.path.basename(path)} with "
            + ", ".join(f"{r.namespace or 'the robot'} (Panda + {r.gripper_type})" for r in spec.robots)
        )
        t0 = time.perf_counter()
        world = create_world(backend, spec)
        for body, robot in zip(world.robots, spec.robots, strict=True):
            body.set_arm_configuration(np.array(robot.reset_joint_target))
        world.start()  # what the grippers hold at start goes into them
        log.info(f"backend ready in {time.perf_counter() - t0:.2f} s (timestep {world.timestep * 1e3:g} ms)")
        loop = SimulationLoop(
            world,
            [CONTROLLERS[r.controller]() for r in spec.robots],
            lambda sim_time, snapshots: None,
            publish_rate=world_node.value("state_publish_rate"),
            real_time_factor=world_node.value("real_time_factor"),
        )
        world_node.loop = loop
        return SimulationProcess(world_node, spec, world, loop)
    except Exception:
        world_node.destroy_node()
        raise


def spin_until(executor: Executor, stop: threading.Event) -> None:
    while not stop.is_set() and rclpy.ok():
        executor.spin_once(timeout_sec=STOP_CHECK_S)


def main(args: list[str] | None = None) -> None:
    # Ctrl-C / SIGTERM (and the parent-death SIGINT) only ask the main thread to stop; it then stops the
    # physics before anything of ROS is torn down. (rclpy's own handlers shut the context down from their
    # thread while the simulation thread may still publish: the suspected cause of a hang seen once.)
    stop = threading.Event()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop_with_parent()  # a launch killed by SIGTERM takes the simulation with it
    # hand the GIL between threads every 0.5 ms, not 5 ms: requests and commands wait on it
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    process = executor = events = spinner = None
    try:
        try:
            process = compose()
        except (ValueError, OSError) as exc:  # a bad parameter, launch argument, world or camera file: say which
            rclpy.logging.get_logger("franka_sim").fatal(f"cannot start: {exc}")
            raise SystemExit(1) from None
        executor = MultiThreadedExecutor(num_threads=4)
        events = make_executor()
        for node in process.nodes:
            (executor if node in process.waiting_nodes else events).add_node(node)
        process.start()
        spinner = threading.Thread(target=spin_until, args=(events, stop), name="ros-events", daemon=True)
        spinner.start()
        spin_until(executor, stop)  # (a Python signal handler runs between two turns)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        ignore_stop_signals()  # stopping: a second Ctrl-C or SIGTERM must not cut the clean-up short
        # a clean-up that hangs says where, in the launch's log, before the launch escalates
        faulthandler.dump_traceback_later(CLEANUP_REPORT_S)
        stop.set()
        if spinner is not None:
            spinner.join(timeout=1.0)  # (the events executor no longer uses the nodes)
        if process is not None:
            process.shutdown()  # the physics first, then the camera process, then the nodes
        for each in (executor, events):
            if each is not None:
                each.shutdown(timeout_sec=1.0)
        rclpy.try_shutdown()
        faulthandler.cancel_dump_traceback_later()


if __name__ == "__main__":
    main()
