"""The stock HIL-SERL FrankaEnv's call sequence (contract.md section 1), written from those facts and
played against the real server and simulator: constructor, reset, then 50 steps at 10 Hz."""

import time

import numpy as np

HZ = 10
# 18 keys, as an experiment config's COMPLIANCE_PARAM and PRECISION_PARAM
COMPLIANCE_PARAM = {
    "translational_stiffness": 2000,
    "translational_damping": 89,
    "rotational_stiffness": 150,
    "rotational_damping": 7,
    "translational_Ki": 0,
    "translational_clip_x": 0.0075,
    "translational_clip_y": 0.0016,
    "translational_clip_z": 0.0055,
    "translational_clip_neg_x": 0.002,
    "translational_clip_neg_y": 0.0016,
    "translational_clip_neg_z": 0.005,
    "rotational_clip_x": 0.01,
    "rotational_clip_y": 0.025,
    "rotational_clip_z": 0.005,
    "rotational_clip_neg_x": 0.01,
    "rotational_clip_neg_y": 0.025,
    "rotational_clip_neg_z": 0.005,
    "rotational_Ki": 0,
}
PRECISION_PARAM = {
    **{k: 0.1 for k in COMPLIANCE_PARAM if "clip" in k},
    "translational_stiffness": 2000,
    "translational_damping": 89,
    "rotational_stiffness": 150,
    "rotational_damping": 7,
    "translational_Ki": 0.0,
    "rotational_Ki": 0.0,
}


def post_pose(robot, pose: np.ndarray) -> None:
    # FrankaEnv sends float32 values
    assert robot.ok("pose", {"arr": np.asarray(pose).astype(np.float32).tolist()}) == "Moved"


def read_state(robot) -> dict:
    state = robot.state()
    assert set(state) == {"pose", "vel", "force", "torque", "q", "dq", "jacobian", "gripper_pos"}
    assert np.array(state["jacobian"]).reshape((6, 7)).shape == (6, 7)
    assert len(state["pose"]) == 7 and len(state["vel"]) == 6 and len(state["q"]) == 7
    return state


def test_stock_frankaenv_sequence_runs_and_the_arm_follows(robot):
    rng = np.random.default_rng(7)
    # constructor
    state = read_state(robot)
    reset_pose = np.array(state["pose"])
    # reset(): compliance, clear, read, move to the reset pose, precision, joint reset, interpolate back
    assert robot.ok("update_param", COMPLIANCE_PARAM) == "Updated compliance parameters"
    assert robot.ok("clearerr") == "Clear"
    current = np.array(read_state(robot)["pose"])
    post_pose(robot, current)
    robot.ok("update_param", PRECISION_PARAM)
    assert robot.ok("jointreset") == "Reset Joint"
    current = np.array(read_state(robot)["pose"])
    away = reset_pose + np.array([0.03, -0.02, 0.02, 0, 0, 0, 0])
    for pose in np.linspace(current, away, 10):  # np.linspace on the 7-vector: non-unit quaternions
        post_pose(robot, pose)
        time.sleep(1.0 / HZ)
    robot.ok("update_param", COMPLIANCE_PARAM)
    robot.ok("clearerr")
    state = read_state(robot)

    # 50 steps at 10 Hz with random bounded actions (relative moves, clipped to a box)
    target = np.array(state["pose"])
    lower, upper = reset_pose[:3] - 0.05, reset_pose[:3] + 0.05
    for step in range(50):
        t_start = time.monotonic()
        target[:3] = np.clip(target[:3] + rng.uniform(-0.01, 0.01, 3), lower, upper)
        robot.ok("clearerr")
        post_pose(robot, target)
        if step in (10, 30):
            assert robot.ok("close_gripper") == "Closed"
            time.sleep(0.6)
        elif step in (20, 40):
            assert robot.ok("open_gripper") == "Opened"
            time.sleep(0.6)
        time.sleep(max(0.0, 1.0 / HZ - (time.monotonic() - t_start)))
        state = read_state(robot)
        # the arm follows: within the compliance clips of the moving target (plus the filter lag)
        assert np.linalg.norm(np.array(state["pose"][:3]) - target[:3]) < 0.03, f"step {step}: {state['pose']}"
    time.sleep(1.5)
    final = np.array(read_state(robot)["pose"])
    assert np.linalg.norm(final[:3] - target[:3]) < 0.005
    assert read_state(robot)["gripper_pos"] > 0.85  # opened last: reads as open
