"""The rest of the real robot: reflexes and error recovery, payload, external wrench, health.
Real sim bridge + server + MuJoCo; forces are applied in simulation through /sim/external_wrench."""

import time

import numpy as np
import pytest

from conftest import Process, Robot, free_port, launch_sim, other_domain, wait_until

NO_CLIP = {f"translational_clip_{s}{a}": 0.1 for s in ("", "neg_") for a in "xyz"}


def health(robot: Robot) -> dict:
    return robot.session.get(robot.url + "health", timeout=5).json()


def test_pushing_into_the_table_trips_a_reflex_until_error_recovery(robot):
    start = robot.pose()
    above = start.copy()
    above[1], above[2] = 0.15, 0.06  # clear of the cube
    robot.ok("pose", {"arr": above.tolist()})
    assert wait_until(lambda: abs(robot.pose()[2] - 0.06) < 0.005, 10.0)
    robot.ok("update_param", {**NO_CLIP, "translational_stiffness": 4000})
    into = above.copy()
    into[2] = -0.04  # 4 cm into the table: about 4000 N/m x 3 cm = 120 N once in contact
    robot.ok("pose", {"arr": into.tolist()})
    assert wait_until(lambda: (health(robot)["robot_mode"] or "").startswith("reflex"), 10.0), health(robot)
    assert "cartesian_reflex" in health(robot)["robot_mode"]
    time.sleep(0.5)  # let the contact relax under the holding robot
    held = robot.pose()
    # while in the reflex, poses are accepted by HTTP but the robot does not follow
    robot.ok("pose", {"arr": start.tolist()})
    time.sleep(1.0)
    assert np.linalg.norm(robot.pose()[:3] - held[:3]) < 0.005
    # error recovery restarts the controller at the current pose; motion resumes
    assert robot.ok("clearerr") == "Clear"
    assert health(robot)["robot_mode"] == "impedance" or wait_until(
        lambda: health(robot)["robot_mode"] == "impedance", 2.0
    )
    robot.ok("update_param", {k: 0.01 for k in NO_CLIP})
    robot.ok("pose", {"arr": start.tolist()})
    assert wait_until(lambda: np.linalg.norm(robot.pose()[:3] - start[:3]) < 0.003, 10.0)


def test_a_pose_far_outside_the_workspace_moves_at_a_bounded_speed_into_the_workspace_reflex(robot, ros):
    start = robot.pose()
    far = start.copy()
    far[2] = 2.5  # far above the arm's reach
    refused = robot.post("pose", json={"arr": far.tolist()})
    assert refused.status_code == 400 and "workspace" in refused.json()["error"]
    ceiling = start[2] + 0.1
    try:
        ros.set_remote_parameters("/franka_control", **{"reflex.workspace_max": [0.9, 0.9, ceiling]})
        since, _ = ros.latest()
        ros.command(far)  # straight to the controller: nothing between it and the robot
        assert wait_until(lambda: (health(robot)["robot_mode"] or "").startswith("reflex"), 10.0), health(robot)
        assert "cartesian_position_limits_violation" in health(robot)["robot_mode"]
        time.sleep(1.0)
        held = robot.pose()
        assert ceiling < held[2] < ceiling + 0.02, "the arm must stop at the box, not sail on"
        time.sleep(0.5)
        assert np.linalg.norm(robot.pose()[:3] - held[:3]) < 0.002, "a robot in a reflex holds still"
        # the clipped impedance law pulls with at most stiffness x clip: a steady climb, no jump
        speeds = ros.speeds_since(since)
        assert speeds.max() < 0.5, f"peak end-effector speed {speeds.max():.2f} m/s"
        assert np.isfinite(robot.state()["q"]).all()
    finally:
        ros.set_remote_parameters("/franka_control", **{"reflex.workspace_max": [0.9, 0.9, 1.3]})
    assert robot.ok("clearerr") == "Clear"
    robot.ok("pose", {"arr": start.tolist()})
    assert wait_until(lambda: np.linalg.norm(robot.pose()[:3] - start[:3]) < 0.003, 10.0)


@pytest.mark.parametrize(
    "limit, reflex",
    [
        ("reflex.joint_velocity_scale", "joint_velocity_violation"),
        ("reflex.torque_scale", "joint_torque_limit_violation"),
    ],
)
def test_joint_velocity_and_torque_limits_are_configurable_reflexes(robot, ros, limit, reflex):
    time.sleep(1.0)  # the controller launched by the joint reset ramps its gains up from zero (~1 s)
    start = robot.pose()
    target = start.copy()
    target[1] += 0.08
    try:
        ros.set_remote_parameters("/franka_control", **{limit: 0.1})  # a tenth of the datasheet limits
        robot.ok("update_param", NO_CLIP)
        robot.ok("pose", {"arr": target.tolist()})
        assert wait_until(lambda: (health(robot)["robot_mode"] or "").startswith("reflex"), 5.0), health(robot)
        assert reflex in health(robot)["robot_mode"]
        robot.ok("pose", {"arr": start.tolist()})  # ignored while in the reflex
        time.sleep(0.5)
        held = robot.pose()
        time.sleep(0.5)
        assert np.linalg.norm(robot.pose()[:3] - held[:3]) < 0.002
    finally:
        ros.set_remote_parameters("/franka_control", **{limit: 1.0})
    assert robot.ok("clearerr") == "Clear"
    assert wait_until(lambda: health(robot)["robot_mode"] == "impedance", 2.0), health(robot)


def test_joint_position_limits_bound_the_reset_target_and_trip_a_reflex(robot, ros):
    target = ros.remote_parameter("/franka_control", "reset_joint_target")
    beyond = [0.0, 0.0, 0.0, 0.5, 0.0, 2.0, 0.0]  # joint 4 ends at -0.0698 rad
    (refused,) = ros.try_remote_parameters("/franka_control", reset_joint_target=beyond)
    assert not refused.successful and "reset_joint_target[3]" in refused.reason, refused
    assert list(ros.remote_parameter("/franka_control", "reset_joint_target")) == list(target)
    try:
        # joint 4 at -0.4 rad is inside its range but within a 0.5 rad reflex margin of its limit
        ros.set_remote_parameters(
            "/franka_control",
            **{"reflex.joint_position_margin": 0.5, "reset_joint_target": [0.0, 0.0, 0.0, -0.4, 0.0, 2.0, 0.0]},
        )
        stopped = robot.post("jointreset", timeout=40)
        # as the original, the answer is always `Reset Joint`; what happened is in a header and the log
        assert stopped.status_code == 200 and stopped.text == "Reset Joint", stopped.text
        assert "joint_position_limits_violation: joint 4" in stopped.headers["X-Joint-Reset"]
        q4 = robot.state()["q"][3]
        assert -0.0698 - 0.5 - 0.02 < q4 < -0.0698 - 0.5 + 0.02, f"joint 4 stopped at {q4}, not at the margin"
    finally:
        ros.set_remote_parameters(
            "/franka_control", **{"reflex.joint_position_margin": 0.01, "reset_joint_target": list(target)}
        )
    assert robot.ok("clearerr") == "Clear"
    assert robot.ok("jointreset") == "Reset Joint"


def test_declared_payload_holds_position_and_an_undeclared_one_sags(robot, ros):
    start = robot.pose()
    load = {"mass": 1.0, "F_x_center_load": [0.0, 0.0, 0.05], "load_inertia": [1e-3, 0, 0, 0, 1e-3, 0, 0, 0, 1e-3]}
    try:
        assert robot.ok("set_load", load) == "Set Load"
        ros.set_remote_parameters(
            "/sim",
            payload_mass=1.0,
            payload_center_of_mass=[0.0, 0.0, 0.05],
            payload_inertia=load["load_inertia"],
        )
        time.sleep(1.5)
        assert abs(robot.pose()[2] - start[2]) < 0.001, "a declared load must not sag"
        assert np.linalg.norm(robot.state()["force"]) < 1.0, "a declared load is not an external force"

        robot.ok("set_load", {**load, "mass": 0.0})
        time.sleep(1.5)
        sag = start[2] - robot.pose()[2]
        assert abs(sag - 9.81 / 2000.0) < 0.0015, f"sag {sag * 1e3:.2f} mm, expected m g / K = 4.9 mm"
        force = np.array(robot.state()["force"])
        # the undeclared weight reads as an external force: the EE z axis points down, and the robot
        # reports the force it exerts on its environment, so ~ -m g along z of the stiffness frame
        assert abs(np.linalg.norm(force) - 9.81) < 0.5 and force[2] < -9.0
    finally:
        ros.set_remote_parameters("/sim", payload_mass=0.0)
        robot.ok("set_load", {**load, "mass": 0.0})


def test_external_wrench_is_reported_in_the_stiffness_frame_with_the_robots_sign(robot, ros):
    robot.ok("update_param", NO_CLIP)
    free = np.array(robot.state()["force"])
    assert np.linalg.norm(free) < 0.2, f"free space must read ~0, got {free}"
    applied = np.array([15.0, 0.0, 0.0])  # pushing the EE along base +x
    ros.push(applied)
    time.sleep(2.0)
    state = robot.state()
    from scipy.spatial.transform import Rotation

    rotation = Rotation.from_quat(state["pose"][3:]).as_matrix()
    expected = -rotation.T @ applied  # exerted by the robot on the environment, in the EE frame
    np.testing.assert_allclose(state["force"], expected, atol=0.05 * np.linalg.norm(applied))
    ros.push([0.0, 0.0, 0.0])


def test_wrench_noise_and_bias_are_configurable(robot, ros):
    try:
        ros.set_remote_parameters("/sim", wrench_bias=[1.0, 0, 0, 0, 0, 0], wrench_noise_std=[0.5, 0.5, 0.5, 0, 0, 0])
        samples = np.array([robot.state()["force"] for _ in range(40)])
        assert abs(samples[:, 0].mean() - 1.0) < 0.3
        assert 0.2 < samples[:, 1].std() < 1.0
    finally:
        ros.set_remote_parameters("/sim", wrench_bias=[0.0] * 6, wrench_noise_std=[0.0] * 6)


def test_health_turns_unhealthy_and_state_routes_503_when_the_simulation_dies():
    port = free_port()
    process = launch_sim(port, env=other_domain())
    robot = Robot(f"http://127.0.0.1:{port}/")
    try:
        assert wait_until(lambda: _answers(robot), 90.0), process.output()
        assert health(robot)["status"] == "ok"
        sim_bridge = _child(process, "sim_bridge")
        sim_bridge.kill()  # the simulator dies; the server stays up
        # stale once the newest state is older than the server's state_timeout (0.75 s)
        assert wait_until(lambda: health(robot)["status"] == "stale", 10.0), health(robot)
        assert health(robot)["state_age_s"] >= 0.75
        response = robot.post("getstate")
        assert response.status_code == 503 and "stale" in response.json()["error"]
    finally:
        process.stop()


def _answers(robot: Robot) -> bool:
    try:
        return robot.post("getstate", timeout=2).status_code == 200
    except Exception:
        return False


def _child(process: Process, name: str):
    import psutil

    for child in psutil.Process(process.popen.pid).children(recursive=True):
        if name in " ".join(child.cmdline()):
            return child
    raise AssertionError(f"no {name} process under the launch")


def test_stopimp_leaves_the_arm_holding_itself_and_startimp_resumes_from_where_it_is(robot):
    start = robot.pose()
    assert robot.ok("stopimp") == "Stopped impedance"
    assert health(robot)["robot_mode"] == "idle" or wait_until(lambda: health(robot)["robot_mode"] == "idle", 2.0)
    robot.ok("pose", {"arr": [*(start[:3] + [0.03, 0.0, 0.0]), *start[3:]]})
    time.sleep(1.0)
    # no controller: the pose is not followed, and gravity compensation alone holds the arm up
    assert np.linalg.norm(robot.pose()[:3] - start[:3]) < 0.01
    assert robot.ok("startimp") == "Started impedance"
    held = robot.pose()
    time.sleep(1.0)
    # restarted at the current pose (the stale target is not chased)
    assert np.linalg.norm(robot.pose()[:3] - held[:3]) < 0.003
    robot.ok("pose", {"arr": [*(start[:3] + [0.03, 0.0, 0.0]), *start[3:]]})
    assert wait_until(lambda: np.linalg.norm(robot.pose()[:3] - (start[:3] + [0.03, 0, 0])) < 0.003, 5.0)
