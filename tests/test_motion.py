"""The arm answers /pose and external forces as the real impedance-controlled robot does
(real sim bridge, real server, real MuJoCo physics; times are simulated time from the stamps)."""

import numpy as np
from scipy.spatial.transform import Rotation

from conftest import wait_until

TOLERANCE_M, TOLERANCE_RAD = 0.002, 0.02


def angle_between(q1: np.ndarray, q2: np.ndarray) -> float:
    return (Rotation.from_quat(q1).inv() * Rotation.from_quat(q2)).magnitude()


def test_pose_command_converges_smoothly_like_the_filtered_controller(robot, ros):
    start = robot.pose()
    target_position = start[:3] + np.array([0.03, 0.0, 0.0])
    target_quat = (Rotation.from_rotvec([0.0, 0.0, 0.1]) * Rotation.from_quat(start[3:])).as_quat()
    t0, _ = ros.latest()
    assert robot.ok("pose", {"arr": [*target_position, *target_quat]}) == "Moved"

    def converged() -> bool:
        _, pose = ros.latest()
        return (
            np.linalg.norm(pose[:3] - target_position) < TOLERANCE_M
            and angle_between(pose[3:], target_quat) < TOLERANCE_RAD
        )

    assert wait_until(converged, 5.0), f"pose {ros.latest()[1]} never reached {target_position}, {target_quat}"
    track = [(t, p) for t, p in list(ros.poses) if t >= t0]
    t_converged = next(
        t
        for t, p in track
        if np.linalg.norm(p[:3] - target_position) < TOLERANCE_M and angle_between(p[3:], target_quat) < TOLERANCE_RAD
    )
    # the equilibrium is filtered (factor 0.005 per 1 ms tick): neither a jump nor a crawl
    assert 0.3 < t_converged - t0 < 1.5, f"converged after {t_converged - t0:.3f} s of simulated time"
    overshoot = max(p[0] for _, p in track) - target_position[0]
    assert overshoot < 0.003, f"overshoot {overshoot * 1e3:.1f} mm"
    # and HTTP reports the same pose
    assert np.linalg.norm(robot.pose()[:3] - target_position) < TOLERANCE_M


def steady_offset(robot, ros, force: np.ndarray, settle_s: float = 2.5) -> np.ndarray:
    """End-effector displacement under a constant external force, after it settles."""
    before = robot.pose()[:3]
    ros.push(force)
    t0, _ = ros.latest()
    assert wait_until(lambda: ros.latest()[0] > t0 + settle_s, 20.0)
    after = np.mean([p[:3] for t, p in list(ros.poses)[-200:]], axis=0)
    ros.push([0.0, 0.0, 0.0])
    return after - before


def test_external_force_displaces_by_force_over_stiffness_and_follows_update_param(robot, ros):
    no_clip = {f"translational_clip_{s}{a}": 0.1 for s in ("", "neg_") for a in "xyz"}
    force = np.array([0.0, 20.0, 0.0])
    robot.ok("update_param", {**no_clip, "translational_stiffness": 2000})
    offset = steady_offset(robot, ros, force)
    np.testing.assert_allclose(offset[1], 20.0 / 2000.0, rtol=0.15)
    assert abs(offset[0]) < 0.002 and abs(offset[2]) < 0.002

    robot.ok("update_param", {"translational_stiffness": 1000})
    assert wait_until(lambda: False, 1.0) is False  # let the filtered stiffness settle
    offset = steady_offset(robot, ros, force)
    np.testing.assert_allclose(offset[1], 20.0 / 1000.0, rtol=0.15)


def test_joint_reset_returns_to_the_reset_configuration(robot):
    start = robot.pose()
    robot.ok("pose", {"arr": [*(start[:3] + [0.05, 0.05, -0.05]), *start[3:]]})
    assert wait_until(lambda: np.linalg.norm(robot.pose()[:3] - start[:3]) > 0.03, 5.0)
    assert robot.ok("jointreset") == "Reset Joint"
    q = np.array(robot.state()["q"])
    np.testing.assert_allclose(q, [0, 0, 0, -1.9, 0, 2, 0], atol=1e-2)
