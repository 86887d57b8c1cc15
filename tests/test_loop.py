"""The simulation loop over a real MuJoCo world, in process (no ROS): calls run between ticks, every
robot is controlled in the same tick, and a loop that died refuses calls at once."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from isaac_franka_bridge.backends import create_world
from isaac_franka_bridge.controller import CartesianImpedanceController
from isaac_franka_bridge.sim import reflexes
from isaac_franka_bridge.sim.loop import Mode, RobotSettings, SimulationLoop
from isaac_franka_bridge.world import load_world, one_robot_world

DUAL_ARM = os.path.join(os.path.dirname(__file__), "..", "config", "tasks", "dual_arm.yaml")


def make_loop(spec, snapshots: list) -> SimulationLoop:
    world = create_world("mujoco", spec)
    for body, robot in zip(world.robots, spec.robots, strict=True):
        body.set_arm_configuration(np.array(robot.reset_joint_target))
    controllers = [CartesianImpedanceController() for _ in spec.robots]
    loop = SimulationLoop(world, controllers, lambda t, s: snapshots.append((t, s)), 500, 0)
    for control in loop.robots:
        loop.submit(control.start_controller)
    return loop


def test_every_robot_of_a_world_is_controlled_and_published_in_the_same_tick():
    snapshots: list = []
    loop = make_loop(load_world(DUAL_ARM, cameras_config="none"), snapshots)
    left, right = loop.robots
    loop.run_ticks(2)
    before = [c.body.measure().position.copy() for c in loop.robots]

    def lift_left() -> None:
        s = left.body.measure()
        left.controller.set_target(s.position + np.array([0.0, 0.0, 0.05]), s.quat)

    loop.submit(lift_left)
    loop.run_ticks(3000)
    after = [c.body.measure().position for c in loop.robots]
    assert after[0][2] - before[0][2] > 0.04  # the left arm rose toward its target
    assert np.linalg.norm(after[1] - before[1]) < 0.001  # the right arm held still
    stamp, both = snapshots[-1]
    assert [s.stamp for s in both] == [stamp, stamp] and stamp == pytest.approx(loop.sim_time)
    assert {c.mode for c in loop.robots} == {Mode.IMPEDANCE}


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the crash, on purpose
def test_a_loop_that_died_refuses_calls_at_once_and_fails_those_waiting():
    loop = make_loop(one_robot_world(), [])

    def broken_step() -> None:
        raise RuntimeError("physics exploded")

    loop.world.end_step = broken_step
    loop.start()
    assert_soon = time.monotonic() + 5.0
    while loop.running and time.monotonic() < assert_soon:
        time.sleep(0.01)
    assert not loop.running
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="not running"):
        loop.call(lambda: None, timeout=10.0)
    assert time.monotonic() - t0 < 0.1
    loop.stop()  # joins the dead thread here, so its exception is reported with this test


def test_the_pace_is_set_as_a_number():
    loop = make_loop(one_robot_world(), [])
    loop.set_pace(2.0)
    assert loop.real_time_factor == 2.0
    with pytest.raises(ValueError):
        loop.set_pace(float("nan"))


def test_a_joint_stopped_in_its_position_margin_can_move_away_after_the_recovery():
    """A joint within `joint_position_margin` of its limit trips the reflex while it moves toward the limit; after
    the error recovery it stands there without tripping it again, and a motion away from the limit goes through
    (a policy that turned joint 7 into its margin left the arm in a reflex that every /clearerr re-entered)."""
    loop = make_loop(one_robot_world(), [])
    control = loop.robots[0]
    control.configure(RobotSettings(reflex_limits=reflexes.ReflexLimits(joint_position_margin=0.3)))
    start = control.body.measure().q.copy()
    toward = start.copy()
    toward[6] = reflexes.JOINT_UPPER[6] - 0.1  # inside the margin
    loop.submit(lambda: control.begin_joint_reset(toward))
    loop.run_ticks(10000)
    assert control.mode is Mode.REFLEX and "joint_position_limits_violation: joint 7" in control.reflex
    assert control.body.measure().q[6] > reflexes.JOINT_UPPER[6] - 0.3 - 0.05
    loop.submit(control.recover)
    loop.run_ticks(2000)
    assert control.mode is Mode.IMPEDANCE, control.reflex  # standing in the margin
    reached = loop.submit(lambda: control.begin_joint_reset(start))
    loop.run_ticks(10000)
    assert control.mode is Mode.IMPEDANCE and abs(control.body.measure().q[6] - start[6]) < 0.02, control.reflex
    assert reached.done() and reached.result().result() is True
