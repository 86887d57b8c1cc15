"""HIL-SERL's stock FrankaEnv, unaltered, in HIL-SERL's environment (tests/hil_serl.Remote), with an example
experiment's own config (ram_insertion's EnvConfig: its parameter sets, reset, limits, action scale; pointed at
the session's simulation, which has no cameras, so the config's cameras are left out), against the real server
and simulator."""

import hil_serl
import numpy as np
import pytest
from example_configs import RAM_INSERTION, euler_to_quat, pose_error, proportional_action


@pytest.fixture()
def frankaenv(robot):
    spec = {
        "env": "franka_env.envs.franka_env:FrankaEnv",
        "config": "experiments.ram_insertion.config:EnvConfig",
        "server": robot.url,
        "cameras": False,
    }
    with hil_serl.Remote(spec, [robot.url]) as env:
        yield env


def currpos(env: hil_serl.Remote) -> np.ndarray:
    return np.array(env.get("currpos"))


@hil_serl.may_build
def test_stock_frankaenv_sequence_runs_and_the_arm_follows(robot, frankaenv):
    """Constructor, reset with a joint reset, then 50 steps at 10 Hz of random bounded actions with the env's
    binary gripper (it closes only above 0.85, opens only below, sleeping GRIPPER_SLEEP after each): the arm
    follows, and the Robotiq closes again after an open, which the published server's open position 175
    (reads 0.31) would never let it."""
    env, rng = frankaenv, np.random.default_rng(7)
    env.reset(joint_reset=True)
    start = currpos(env)
    for step in range(50):
        action = np.zeros(7)
        action[:3] = rng.uniform(-1.0, 1.0, 3)
        action[6] = {10: -1.0, 20: 1.0, 30: -1.0, 40: 1.0}.get(step, 0.0)
        if action[6]:  # the previous command (10 steps ago) took: a close finds it open, an open closed
            assert (robot.state()["gripper_pos"] > 0.85) == (action[6] < 0), (step, robot.state()["gripper_pos"])
        target = np.array(env.call("clip_safety_box", currpos(env) + np.r_[action[:3] * 0.01, 0, 0, 0, 0]))
        env.step(action)
        # the arm follows: within the compliance clips of the moving target (plus the filter lag)
        assert np.linalg.norm(currpos(env)[:3] - target[:3]) < 0.03, f"step {step}: {currpos(env)}"
        assert np.linalg.norm(currpos(env)[:3] - start[:3]) < 0.1
    assert robot.state()["gripper_pos"] > 0.85  # opened: fully, as the env expects (docs/differences.md)


@hil_serl.may_build
def test_ram_insertion_reset_then_a_proportional_policy_reaches_the_target(robot, frankaenv):
    """From the joint-reset configuration, FrankaEnv's reset with ram_insertion's config (PRECISION_PARAM's 0.5
    rotational clips clamped to 0.1, as the real server does) ends near its random reset pose (RESET_POSE within
    2 cm in x and y, 0.05 rad in yaw), and a policy stepping toward TARGET_POSE at 10 Hz reaches it within 1 cm
    and 0.2 rad in at most 30 steps. (With the clips left at the tight compliance values, as when the set was
    refused, the reset ended 3 cm and 0.6 rad off.)"""
    env = frankaenv
    robot.ok("jointreset")
    start = robot.pose()
    env.reset()
    reset_pose = RAM_INSERTION.reset_pose
    aimed = np.concatenate([reset_pose[:3], euler_to_quat(reset_pose[3:])])
    travel, turn = pose_error(start, aimed)
    position_error, angle = pose_error(currpos(env), aimed)
    # the random reset's range (2 cm in x and y, 0.05 rad), and the controller's equilibrium filter (0.005 per
    # 1 ms tick: a 0.2 s time constant) trailing a target moving at constant speed by speed x 0.2 s, over 1 s
    assert turn > 0.5, "the reset should turn the hand (the joint-reset pose is yawed from ram_insertion's)"
    assert position_error < 0.03 + 1.5 * 0.2 * travel + 0.005, (position_error, travel)
    assert angle < 0.05 + 1.5 * 0.2 * turn + 0.02, (angle, turn)
    target = np.concatenate([RAM_INSERTION.target_pose[:3], euler_to_quat(RAM_INSERTION.target_pose[3:])])
    steps, (position_error, angle) = 0, pose_error(currpos(env), target)
    while steps < 30 and not (position_error < 0.01 and angle < 0.2):
        env.step(proportional_action(currpos(env), target, RAM_INSERTION.action_scale))
        steps += 1
        position_error, angle = pose_error(currpos(env), target)
    print(f"ram_insertion: target reached in {steps} steps")
    assert position_error < 0.01 and angle < 0.2, (steps, position_error, angle)
