"""Bad input on every route: 400 with a JSON error, nothing changed, and the simulation keeps stepping."""

import numpy as np
import pytest
import requests

from conftest import Process, free_port, other_domain, wait_until

NAN_BODY = '{"arr": [0.5, 0.0, 0.3, NaN, 0, 0, 1]}'
BAD_BODIES = {
    "pose": [
        "not json",
        "[1, 2, 3]",
        {},
        {"arr": [0.5, 0.0, 0.3]},
        {"arr": [0.5, 0.0, 0.3, 1, 0, 0, 0, 9]},
        {"arr": ["a", 0, 0.3, 1, 0, 0, 0]},
        {"arr": [0.5, 0.0, 0.3, True, 0, 0, 0]},
        NAN_BODY,
        '{"arr": [0.5, Infinity, 0.3, 1, 0, 0, 0]}',
        {"arr": [0.5, 0.0, 0.3, 0, 0, 0, 0]},  # zero quaternion
        {"arr": [5.0, 0.0, 0.3, 1, 0, 0, 0]},  # outside the workspace
        {"arr": [0.5, 0.0, -2.0, 1, 0, 0, 0]},
    ],
    "update_param": [  # out-of-range values are clamped, as the original (test_conformance.py)
        "not json",
        "[1, 2]",
        {"no_such_parameter": 1.0},
        {"translational_stiffness": "stiff"},
        '{"translational_stiffness": NaN}',
        {"translational_damping": 50, "no_such_parameter": 1.0},  # one unknown name: none applied
    ],
    "move_gripper": [
        "not json",
        {},
        {"gripper_pos": "open"},
        {"gripper_pos": "12.5"},  # int() refuses it (the original answered 500)
        {"gripper_pos": None},
        '{"gripper_pos": NaN}',
        '{"gripper_pos": Infinity}',
    ],
    "set_load": [
        "not json",
        {"mass": 1.0},
        {"mass": -1.0, "F_x_center_load": [0, 0, 0], "load_inertia": [0] * 9},
        {"mass": 1.0, "F_x_center_load": [0, 0], "load_inertia": [0] * 9},
        {"mass": 1.0, "F_x_center_load": [0, 0, 0], "load_inertia": [0] * 8},
        '{"mass": NaN, "F_x_center_load": [0, 0, 0], "load_inertia": [0, 0, 0, 0, 0, 0, 0, 0, 0]}',
    ],
}
CASES = [(route, body) for route, bodies in BAD_BODIES.items() for body in bodies]


@pytest.mark.parametrize("route,body", CASES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(CASES)])
def test_malformed_request_is_refused_with_400_and_changes_nothing(sim, route, body):
    robot, _ = sim
    before = robot.state()
    if isinstance(body, str):
        response = robot.post(route, data=body)
    else:
        response = robot.post(route, json=body)
    assert response.status_code == 400, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.json()["error"]
    after = robot.state()
    np.testing.assert_allclose(after["pose"][:3], before["pose"][:3], atol=1e-3)


def test_refused_parameters_leave_the_controller_unchanged(sim, ros):
    robot, _ = sim
    robot.ok("update_param", {"translational_damping": 89})
    assert robot.post("update_param", json={"translational_damping": 50, "no_such_parameter": 1e6}).status_code == 400
    assert ros.remote_parameter("/cartesian_impedance_controller", "translational_damping") == 89.0
    robot.ok("update_param", {"translational_damping": 60})
    assert ros.remote_parameter("/cartesian_impedance_controller", "translational_damping") == 60.0
    robot.ok("update_param", {"translational_damping": 89})


def test_simulation_keeps_stepping_after_a_barrage_of_bad_input(sim, ros):
    robot, process = sim
    t0, _ = ros.latest()
    for route, body in CASES:
        robot.post(route, data=body) if isinstance(body, str) else robot.post(route, json=body)
    assert wait_until(lambda: ros.latest()[0] > t0 + 0.5, 10.0)
    assert process.alive()
    assert robot.post("getstate").status_code == 200


def test_without_a_robot_state_routes_answer_503_not_zeros():
    """franka_server alone (no simulator on its ROS domain): clear 503s, never a crash or zeros."""
    port = free_port()
    server = Process(
        [
            "ros2",
            "run",
            "isaac_franka_bridge",
            "franka_server",
            "--ros-args",
            "-p",
            f"port:={port}",
            "-p",
            "service_timeout:=0.5",
        ],
        "server-alone",
        env=other_domain(),  # a domain with no robot
    )
    url = f"http://127.0.0.1:{port}/"

    def up() -> bool:
        try:
            return requests.post(url + "getpos", timeout=1).status_code > 0
        except requests.ConnectionError:
            return False

    try:
        assert wait_until(up, 30.0), server.output()
        for route in ("getstate", "getpos", "getq", "get_gripper", "getjacobian"):
            response = requests.post(url + route, timeout=5)
            assert response.status_code == 503 and "error" in response.json()
        response = requests.post(url + "pose", json={"arr": [0.5, 0, 0.3, 1, 0, 0, 0]}, timeout=5)
        assert response.status_code == 503
        assert requests.post(url + "clearerr", timeout=5).status_code == 503
        assert server.alive()
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (("gripper_type:=Foo",), "gripper_type 'Foo' must be one of Robotiq, Franka, None"),
        (("world:=no_such_world",), "no_such_world.yaml: No such file or directory"),
        (("cameras_config:=/no/such/cameras.yaml",), "cameras_config /no/such/cameras.yaml: No such file"),
        (("reset_joint_target:=[0, 0, 0]",), "reset_joint_target must be 7 finite numbers"),
        (("world:=dual_arm", "gripper_type:=Franka"), "set for a world of 2 robots"),
        (("real_time_factor:=fast",), "real_time_factor:=fast is not a number"),
        (("backend:=isaac",), "the isaac backend mounts no gripper_type 'Robotiq' (it has Franka)"),
        (("backend:=isaac", "gripper_type:=Franka"), "the isaac backend renders no cameras: set cameras_config:=none"),
    ],
)
def test_a_bad_launch_argument_or_world_stops_everything_with_one_fatal_line(arguments, reason):
    """Checked before any process starts, so the simulation and every server stop alike: exit code 1,
    one FATAL line naming the cause, no traceback."""
    process = Process(
        ["ros2", "launch", "isaac_franka_bridge", "sim.launch.py", f"port:={free_port()}", *arguments],
        "bad-launch",
        env=other_domain(),
    )
    try:
        process.popen.wait(timeout=30)
    finally:
        process.stop()
    output = process.output()
    fatal = [line for line in output.splitlines() if "FATAL" in line]
    assert process.popen.returncode == 1, output
    assert len(fatal) == 1 and reason in fatal[0], output
    assert "Traceback" not in output and "process started" not in output, output


@pytest.mark.parametrize(
    ("parameter", "reason"),
    [
        ("gripper_type:=Foo", "gripper_type 'Foo' must be one of"),
        ("cameras_config:=/no/such/cameras.yaml", "No such file or directory"),
        ("state_timeout:=soon", "state_timeout"),  # a string where a double belongs
        ("state_wait:=-1.0", "state_wait"),  # outside its range
    ],
)
def test_the_server_alone_stops_on_a_bad_parameter_with_one_fatal_line(parameter, reason):
    """franka_server run by itself (ros2 run, another launch file): the same one-line refusal."""
    process = Process(
        [
            "ros2",
            "run",
            "isaac_franka_bridge",
            "franka_server",
            "--ros-args",
            "-p",
            f"port:={free_port()}",
            "-p",
            parameter,
        ],
        "bad-server",
        env=other_domain(),
    )
    try:
        process.popen.wait(timeout=30)
    finally:
        process.stop()
    output = process.output()
    fatal = [line for line in output.splitlines() if "FATAL" in line]
    assert process.popen.returncode == 1, output
    assert len(fatal) == 1 and reason in fatal[0], output
    assert "Traceback" not in output, output
