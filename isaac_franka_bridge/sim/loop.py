"""The simulation loop: one thread owning the physics of a world, running each robot's 1 kHz control.

Shared by every backend. Each tick it measures every arm, runs each robot's active mode (the
impedance controller, a joint reset, or nothing but the robot's own gravity compensation),
applies the torques and steps the world once, paced to wall-clock time. Every `publish_every`
ticks it hands each robot's consistent `RobotSnapshot` to `on_snapshot` (the ROS nodes publish
them; where they publish every joint and frame they take each robot's `joints` there). Other
threads talk to it only through `submit` / `call`, which run a function between two ticks, and
fail at once when the loop has died.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.base import PhysicsRobot, PhysicsWorld
from ..controller import CartesianImpedanceController, CartesianWrenchController
from ..controller.impedance import damped_pinv_of_transpose_times
from . import reflexes
from .joint_reset import KD as HOLD_KD
from .joint_reset import KP as HOLD_KP
from .joint_reset import JointResetMotion
from .load import holding_torque
from .state import ArmState, JointSnapshot, RobotSnapshot

log = logging.getLogger(__name__)

CATCH_UP_LIMIT = 2.0  # [s] a lag up to this is made up by running faster; beyond, pace restarts from now
# [s] the paced loop runs ahead of the wall clock by up to this, then sleeps it off: a few ticks per wake-up.
# Every wake-up of the sleeping thread costs (measured on a 2-core VM: one tick of ram_insertion 118 us unpaced,
# 200 us paced with a sleep after every 1 ms ahead, 151 us after every 4 ms); a command wakes it at once
SLEEP_AHEAD = 0.004
SAFETY_EVERY = 2  # ticks between external-wrench estimates and reflex checks (2 ms)
WRENCH_FILTER_FACTOR = 0.2  # first-order filter of the wrench estimate per estimate (~10 ms)


class Mode(str, enum.Enum):
    IMPEDANCE = "impedance"  # Cartesian impedance control toward the equilibrium pose
    WRENCH = "wrench"  # egg_flip's Cartesian wrench controller
    IDLE = "idle"  # controller stopped: the arm holds itself under gravity compensation only
    JOINT_RESET = "joint_reset"  # joint-space move to the reset configuration
    REFLEX = "reflex"  # a limit was exceeded: the arm holds still, commands are ignored until recovery


Controller = CartesianImpedanceController | CartesianWrenchController


@dataclass(frozen=True)
class RobotSettings:
    """What the ROS parameters of one robot set in its simulation (handed over whole, between ticks)."""

    reflex_limits: reflexes.ReflexLimits = field(default_factory=reflexes.ReflexLimits)
    declared_load: tuple[float, np.ndarray] = (0.0, np.zeros(3))  # what set_load told the robot
    payload: tuple[float, np.ndarray, np.ndarray] = (0.0, np.zeros(3), np.zeros((3, 3)))  # attached (sim only)
    wrench_bias: np.ndarray = field(default_factory=lambda: np.zeros(6))  # added to K_F_ext_hat_K
    wrench_noise_std: np.ndarray = field(default_factory=lambda: np.zeros(6))  # white noise on it


class RobotControl:
    """One robot's side of the loop: its mode, controller, joint reset, reflexes and wrench estimate.
    Every method runs in the simulation thread (through SimulationLoop.submit / call)."""

    def __init__(self, body: PhysicsRobot, controller: Controller, dt: float) -> None:
        self.body = body
        self.controller = controller
        # the mode of the controller it runs (the real stack runs one: the launch file chooses)
        self.control_mode = Mode.WRENCH if isinstance(controller, CartesianWrenchController) else Mode.IMPEDANCE
        self.dt = dt
        self.sim_time = 0.0
        self.mode = self.control_mode
        self._reset: JointResetMotion | None = None
        self._reset_done: Future | None = None
        self.reflex: str | None = None  # the active reflex error, until recovery
        self._q_hold = np.zeros(7)
        self._mode_after_recovery = self.control_mode  # what error recovery returns to
        self._restart_on_recovery = False  # the reflex stopped a joint reset: recovery launches a fresh controller
        # the torque the robot was last commanded by a controller (its tau_J_d, without gravity and load):
        # where a starting controller's torque-rate limit counts from; zero while none commands
        self.tau_commanded = np.zeros(7)
        self.settings = RobotSettings()
        self._noisy = False  # whether settings.wrench_noise_std has a non-zero entry
        self._rng = np.random.default_rng()
        self._wrench_on_robot = np.zeros(6)  # estimated external wrench acting on the robot, base frame

    # ------------------------------------------------------------------ settings and mode changes
    def configure(self, settings: RobotSettings) -> None:
        mass, center, inertia = settings.payload
        old_mass, old_center, _ = self.settings.payload
        if mass != old_mass or not np.array_equal(center, old_center):
            self.body.set_payload(mass, center, inertia)
        self.settings = settings
        self._noisy = bool(settings.wrench_noise_std.any())

    def start_controller(self) -> None:
        """Launch the controller afresh at the current pose (impedance: gains rise from zero), as the
        original stack does at boot, after a joint reset and on /startimp (/startwrench). Refused during a
        reflex."""
        if self.mode is Mode.REFLEX:
            raise RuntimeError(f"robot is in a reflex ({self.reflex}); call error recovery first")
        s = self.body.measure()
        self.controller.start(s.q, s.position, s.quat, self.tau_commanded)
        self.mode = self.control_mode

    def stop_controller(self) -> None:
        if self.mode is Mode.REFLEX:  # stays stopped after the recovery
            self._mode_after_recovery = Mode.IDLE
        else:
            self.mode = Mode.IDLE

    def recover(self) -> str:
        """Error recovery: leave a reflex. A running impedance controller restarts at the current pose
        (the original's starting(): its gains go on); after a joint reset it is launched afresh."""
        if self.mode is not Mode.REFLEX:
            return "no reflex error active"
        cleared, self.reflex = self.reflex, None
        s = self.body.measure()
        self.mode = self._mode_after_recovery
        if self.mode is self.control_mode and self._restart_on_recovery:
            self.controller.start(s.q, s.position, s.quat, self.tau_commanded)
        elif self.mode is self.control_mode:
            self.controller.seed(s.q, s.position, s.quat, self.tau_commanded)
        log.info("reflex cleared: %s", cleared)
        return f"cleared: {cleared}"

    def _enter_reflex(self, reason: str, s: ArmState) -> None:
        log.warning("reflex: %s", reason)
        self.reflex = reason
        self._q_hold = s.q.copy()
        self._restart_on_recovery = self.mode is Mode.JOINT_RESET
        self._mode_after_recovery = Mode.IDLE if self.mode is Mode.IDLE else self.control_mode
        if self.mode is Mode.JOINT_RESET and not self._reset_done.done():
            self._reset_done.set_result(False)
        self.mode = Mode.REFLEX
        self.tau_commanded = np.zeros(7)  # the robot stops commanding

    def begin_joint_reset(self, target: np.ndarray, tolerance: float = 1e-2, timeout: float = 30.0) -> Future:
        """Start a joint-space move to `target`; the Future resolves to True at the target, False on timeout."""
        s = self.body.measure()
        if self.mode is Mode.REFLEX:
            raise RuntimeError(f"robot is in a reflex ({self.reflex}); call error recovery first")
        if self._reset_done is not None and not self._reset_done.done():
            self._reset_done.set_result(False)
        self._reset = JointResetMotion(s.q, np.asarray(target, float), self.sim_time, tolerance, timeout)
        self._reset_done = Future()
        self.mode = Mode.JOINT_RESET
        return self._reset_done

    # ------------------------------------------------------------------ one tick
    def control(self, tick: int) -> ArmState:
        """Measure, compute and hand the torques to the body; the world steps after every robot did."""
        s = self.body.measure()
        if self.mode is self.control_mode:
            tau = self.controller.update(s.q, s.dq, s.position, s.rotation, s.quat, s.jacobian, s.coriolis)
            self.tau_commanded = tau
        elif self.mode is Mode.JOINT_RESET:
            tau = self.tau_commanded = self._reset.torque(s.q, s.dq, self.sim_time) + s.coriolis
            if self._reset.finished(s.q, s.dq, self.sim_time):
                self._reset_done.set_result(self._reset.reached(s.q))
                self.start_controller()
        elif self.mode is Mode.REFLEX:  # hold still, as the robot does after a reflex
            tau = HOLD_KP * (self._q_hold - s.q) - HOLD_KD * s.dq + s.coriolis
        else:
            tau = self.tau_commanded = np.zeros(7)
        # the robot's own model compensates the load it was told about
        declared_load = self._load_torque(s, *self.settings.declared_load)
        if isinstance(declared_load, np.ndarray):  # (none declared: nothing to add)
            tau = tau + declared_load
        if tick % SAFETY_EVERY == 0:
            self._estimate_wrench(s, declared_load)
            if self.mode is not Mode.REFLEX:
                reason = reflexes.check(
                    self.settings.reflex_limits, s.q, s.dq, tau, s.position, self._wrench_on_robot[:3]
                )
                if reason is not None:
                    self._enter_reflex(reason, s)
                    tau = s.coriolis + declared_load
        self.body.set_torque(tau)
        return s

    def _load_torque(self, s: ArmState, mass: float, center_of_mass: np.ndarray) -> np.ndarray | float:
        if mass <= 0.0:
            return 0.0
        return holding_torque(s.jacobian, s.position, s.rotation, self.body.flange_to_ee, mass, center_of_mass)

    def _estimate_wrench(self, s: ArmState, declared_load: np.ndarray | float) -> None:
        """External wrench on the robot at the EE, as a torque-sensing robot estimates it.

        Contacts and pushes, plus whatever of the load's weight the declared load (its holding
        torque `declared_load`) does not explain.
        """
        tau_ext = self.body.external_torque() + declared_load
        mass, center = self.settings.payload[:2]
        if mass > 0.0:
            tau_ext -= self._load_torque(s, mass, center)
        wrench = damped_pinv_of_transpose_times(s.jacobian, 1e-3, tau_ext)
        # filtered like the robot's tau_ext_hat_filtered: contact impulses of one tick are not a collision
        a = WRENCH_FILTER_FACTOR
        self._wrench_on_robot = a * wrench + (1.0 - a) * self._wrench_on_robot

    def snapshot(self, s: ArmState) -> RobotSnapshot:
        """The state measured at the start of this tick, with the wrench estimated from it."""
        # K_F_ext_hat_K: as the real robot reports it, the wrench the robot exerts on its
        # environment (the negative of the one acting on it), in the stiffness (EE) frame
        # (rows of w.reshape(2, 3) @ R are R^T f and R^T m)
        wrench_k = self.settings.wrench_bias - (self._wrench_on_robot.reshape(2, 3) @ s.rotation).ravel()
        if self._noisy:
            wrench_k += self._rng.normal(0.0, 1.0, 6) * self.settings.wrench_noise_std
        return RobotSnapshot(
            self.sim_time,
            s.q,
            s.dq,
            s.tau_measured,
            s.position,
            s.quat,
            s.jacobian @ s.dq,
            wrench_k,
            s.jacobian,
            self.body.gripper_positions(),
            self.mode.value,
        )

    def joints(self) -> JointSnapshot:
        """Every joint and frame of the robot now, for /joint_states and TF: taken in the simulation thread
        where they are published (on_snapshot), not every state tick."""
        b = self.body
        positions, velocities = b.joint_state()
        frame_positions, frame_quats = b.frame_poses()
        return JointSnapshot(positions, velocities, frame_positions, frame_quats)


class SimulationLoop:
    def __init__(
        self,
        world: PhysicsWorld,
        controllers: list[Controller],
        on_snapshot: Callable[[float, list[RobotSnapshot]], None],
        publish_rate: float = 1000.0,
        real_time_factor: float = 1.0,
    ) -> None:
        """One controller per robot of `world`. `real_time_factor`: wall-clock pacing (1.0 = real
        time, 0 = as fast as possible). `on_snapshot(sim_time, snapshots)` gets every robot's
        snapshot of a publishing tick, in the world's robot order."""
        self.world = world
        self.dt = world.timestep
        self.robots = [RobotControl(body, c, self.dt) for body, c in zip(world.robots, controllers, strict=True)]
        self.on_snapshot = on_snapshot
        self.publish_every = max(1, round(1.0 / (publish_rate * self.dt)))
        self.real_time_factor = real_time_factor
        self.sim_time = 0.0
        self.ticks = 0
        self.measured_rtf = 0.0
        self.tick_durations: deque[float] = deque(maxlen=5000)  # [s] compute time of recent ticks
        self._commands: queue.SimpleQueue[tuple[Callable[[], Any], Future]] = queue.SimpleQueue()
        self._wake = threading.Event()  # set by submit: a sleeping loop ticks at once
        # called at state ticks with (sim time, world.render_state()) when cameras render
        self.render_sink: Callable[[float, object], None] | None = None
        self._running = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ thread-safe API
    def submit(self, fn: Callable[[], Any]) -> Future:
        """Run `fn` in the simulation thread before the next tick; its result lands in the Future.
        Raises RuntimeError when the loop was started and has stopped: nothing would ever run it."""
        if self._thread is not None and not self.running:
            raise RuntimeError("the simulation loop is not running")
        future: Future = Future()
        self._commands.put((fn, future))
        self._wake.set()
        return future

    def call(self, fn: Callable[[], Any], timeout: float = 2.0) -> Any:
        return self.submit(fn).result(timeout=timeout)

    def start(self) -> None:
        self._running.set()
        self._thread = threading.Thread(target=self._run, name="simulation", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._running.clear()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._running.is_set()

    def set_pace(self, real_time_factor: float) -> None:
        """Wall-clock pacing from the next tick (1.0 real time, 0 as fast as possible); any thread."""
        if not real_time_factor >= 0.0:
            raise ValueError(f"real_time_factor must be >= 0, got {real_time_factor}")
        self.real_time_factor = float(real_time_factor)  # one float: read whole by the loop thread

    def run_ticks(self, n: int) -> None:
        """Step `n` ticks in the calling thread, unpaced (tools and benchmarks; not while running)."""
        if self.running:
            raise RuntimeError("the simulation loop runs in its own thread")
        for _ in range(n):
            self._tick()

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        wall0, sim0 = time.perf_counter(), self.sim_time
        rtf_wall, rtf_sim = wall0, self.sim_time
        try:
            while self._running.is_set():
                t_start = time.perf_counter()
                self._tick()
                now = time.perf_counter()
                self.tick_durations.append(now - t_start)
                if now - rtf_wall >= 1.0:
                    self.measured_rtf = (self.sim_time - rtf_sim) / (now - rtf_wall)
                    rtf_wall, rtf_sim = now, self.sim_time
                if self.real_time_factor > 0.0:
                    ahead = (self.sim_time - sim0) / self.real_time_factor - (now - wall0)
                    if ahead > SLEEP_AHEAD:
                        self._sleep(ahead)
                    elif ahead < -CATCH_UP_LIMIT:  # fell far behind: keep pace from here rather than sprint
                        wall0, sim0 = now, self.sim_time
        except Exception:  # a dead simulation must be visible, not silent
            log.exception("simulation loop crashed")
            raise
        finally:
            self._running.clear()
            self._fail_pending()

    def _sleep(self, ahead: float) -> None:
        """Wait out `ahead`; a command submitted meanwhile ends the wait, so that the next tick runs it now, as
        at 1 kHz (unless a flood of commands has put the loop twice SLEEP_AHEAD ahead: it then sleeps it off)."""
        if ahead > 2.0 * SLEEP_AHEAD:
            time.sleep(ahead)
            return
        self._wake.wait(ahead)
        self._wake.clear()  # (a command submitted since is in the queue: the next tick runs it)

    def _fail_pending(self) -> None:
        while not self._commands.empty():
            _, future = self._commands.get_nowait()
            if future.set_running_or_notify_cancel():
                future.set_exception(RuntimeError("the simulation loop stopped"))

    def _tick(self) -> None:
        self.world.begin_step()
        while not self._commands.empty():
            fn, future = self._commands.get_nowait()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except Exception as exc:  # report to the caller, keep stepping
                    future.set_exception(exc)
        states = [robot.control(self.ticks) for robot in self.robots]
        self.world.end_step()
        self.ticks += 1
        self.sim_time = self.ticks * self.dt
        for robot in self.robots:
            robot.sim_time = self.sim_time
        if self.ticks % self.publish_every == 0:
            if self.render_sink is not None:
                self.render_sink(self.sim_time, self.world.render_state())
            self.on_snapshot(self.sim_time, [r.snapshot(s) for r, s in zip(self.robots, states, strict=True)])
