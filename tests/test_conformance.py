"""Conformance with the original server (contract.md sections 1 and 5), table-driven, against the real
server and simulator: /update_param converts and clamps as dynamic_reconfigure does, /jointreset recovers
from a reflex first. The grippers' tables are in test_gripper.py (they need both gripper types)."""

import json
import time

import numpy as np
import pytest
from example_configs import RAM_INSERTION

from isaac_franka_bridge.controller import DEFAULT_COMPLIANCE

from conftest import wait_until

CONTROLLER = "/cartesian_impedance_controller"
# ram_insertion's PRECISION_PARAM (HIL-SERL's config, checked by test_example_configs.py): every rotational clip
# 0.5, above the 0.1 maximum; the real server clamps them and applies the whole set
RAM_PRECISION_PARAM = RAM_INSERTION.precision_param

# body sent -> values read back over ROS 2 (None: not sent, unchanged)
UPDATE_PARAM_CASES = {
    "above the range clamps to the maximum": ({"rotational_clip_x": 0.5}, {"rotational_clip_x": 0.1}),
    "below the range clamps to the minimum": ({"translational_stiffness": -1}, {"translational_stiffness": 0.0}),
    "far above clamps too": ({"translational_stiffness": 7000}, {"translational_stiffness": 6000.0}),
    "a numeric string converts as float()": ({"translational_damping": "50"}, {"translational_damping": 50.0}),
    "a bool converts as float()": ({"rotational_Ki": True}, {"rotational_Ki": 1.0}),
    "an integer converts": ({"nullspace_stiffness": 3}, {"nullspace_stiffness": 3.0}),
    "in range and out of range in one set: all applied": (
        {"translational_damping": 50, "rotational_stiffness": 1e6},
        {"translational_damping": 50.0, "rotational_stiffness": 300.0},
    ),
    "ram_insertion's PRECISION_PARAM": (
        RAM_PRECISION_PARAM,
        {
            **{k: float(v) for k, v in RAM_PRECISION_PARAM.items() if not k.startswith("rotational_clip")},
            **{f"rotational_clip_{s}{a}": 0.1 for s in ("", "neg_") for a in "xyz"},
        },
    ),
}

# bodies the original would also refuse (or crash on): 400, nothing changed
UPDATE_PARAM_REFUSED = {
    "an unknown name, beside a valid one": {"translational_damping": 50, "no_such_parameter": 1.0},
    "text float() refuses": {"translational_damping": "stiff"},
    "null": {"translational_damping": None},
    "a list": {"translational_damping": [1.0]},
    "NaN": '{"translational_damping": NaN}',
    "infinity": '{"translational_damping": Infinity}',
}


def read_back(ros, names) -> dict[str, float]:
    return {name: ros.remote_parameter(CONTROLLER, name) for name in names}


@pytest.fixture()
def defaults(sim):
    robot, _ = sim
    robot.ok("update_param", DEFAULT_COMPLIANCE)
    yield robot
    robot.ok("update_param", DEFAULT_COMPLIANCE)


@pytest.mark.parametrize("case", list(UPDATE_PARAM_CASES))
def test_update_param_converts_clamps_and_applies_the_whole_set(defaults, ros, case):
    robot = defaults
    body, expected = UPDATE_PARAM_CASES[case]
    response = robot.post("update_param", json=body)
    assert response.status_code == 200 and response.text == "Updated compliance parameters", response.text
    assert read_back(ros, expected) == pytest.approx(expected)
    clamped = json.loads(response.headers.get("X-Clamped-Parameters", "{}"))
    sent_as_float = {k: float(v) for k, v in body.items()}
    assert clamped == {k: v for k, v in expected.items() if v != sent_as_float[k]}


def test_update_param_accepts_an_empty_set_and_changes_nothing(defaults, ros):
    """DefaultEnvConfig's PRECISION_PARAM is {}: the env posts it at every reset."""
    before = read_back(ros, DEFAULT_COMPLIANCE)
    assert defaults.ok("update_param", {}) == "Updated compliance parameters"
    assert read_back(ros, DEFAULT_COMPLIANCE) == before


@pytest.mark.parametrize("case", list(UPDATE_PARAM_REFUSED))
def test_update_param_refuses_unknown_names_and_unconvertible_values_changing_nothing(defaults, ros, case):
    body = UPDATE_PARAM_REFUSED[case]
    response = defaults.post("update_param", **({"data": body} if isinstance(body, str) else {"json": body}))
    assert response.status_code == 400, response.text
    assert response.json()["error"]
    assert ros.remote_parameter(CONTROLLER, "translational_damping") == 89.0


def health(robot) -> dict:
    return robot.session.get(robot.url + "health", timeout=5).json()


def trip_a_reflex(robot, ros) -> np.ndarray:
    """A move at a tenth of the joint velocity limits trips the velocity reflex; returns the start pose."""
    start = robot.pose()
    robot.ok("pose", {"arr": [*(start[:3] + [0.0, 0.06, -0.05]), *start[3:]]})
    assert wait_until(lambda: np.linalg.norm(robot.pose()[:3] - start[:3]) > 0.05, 5.0)
    ros.set_remote_parameters("/franka_control", **{"reflex.joint_velocity_scale": 0.1})
    try:
        robot.ok("pose", {"arr": start.tolist()})
        assert wait_until(lambda: (health(robot)["robot_mode"] or "").startswith("reflex"), 10.0), health(robot)
    finally:
        ros.set_remote_parameters("/franka_control", **{"reflex.joint_velocity_scale": 1.0})
    return start


def test_jointreset_recovers_from_a_reflex_first_as_the_original(robot, ros):
    """The original's /jointreset clears errors before it moves: from a reflex it still answers
    `Reset Joint` with the arm at the reset target and impedance control running again."""
    target = np.array(ros.remote_parameter("/franka_control", "reset_joint_target"))
    start = trip_a_reflex(robot, ros)
    response = robot.post("jointreset", timeout=45)
    assert response.status_code == 200 and response.text == "Reset Joint", response.text
    assert response.headers["X-Joint-Reset"] == "at the reset joint target"
    assert np.abs(np.array(robot.state()["q"]) - target).max() < 1e-2
    assert wait_until(lambda: health(robot)["robot_mode"] == "impedance", 2.0), health(robot)
    # impedance control runs: the arm answers a pose again
    goal = start[:3] + np.array([0.0, 0.0, -0.02])
    robot.ok("pose", {"arr": [*goal, *start[3:]]})
    assert wait_until(lambda: np.linalg.norm(robot.pose()[:3] - goal) < 0.003, 5.0)


def test_routes_right_after_a_reflex_recovery_answer_as_the_original_never_5xx(robot, ros):
    """A robot that falls back into a reflex right after its recovery (here: its hand above the workspace box's
    ceiling, lowered under it, so that every tick after a recovery trips the workspace reflex again) makes the
    controller's start fail between /startimp's error recovery and its start. The original never reads either
    outcome: /startimp, /clearerr, /pose and /getstate answer as it would (the refusal in the X-Refused header),
    no 5xx."""
    start = robot.pose()
    ros.set_remote_parameters("/franka_control", **{"reflex.workspace_max": [0.9, 0.9, float(start[2]) - 0.02]})
    statuses, refused = [], []
    try:
        assert wait_until(lambda: (health(robot)["robot_mode"] or "").startswith("reflex"), 5.0), health(robot)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            for route, body in (("startimp", None), ("pose", {"arr": start.tolist()}), ("getstate", None),
                                ("clearerr", None)):  # fmt: skip
                response = robot.post(route, json=body)
                statuses.append((route, response.status_code, response.text[:200]))
                refused += [response.headers["X-Refused"]] if response.headers.get("X-Refused") else []
    finally:
        ros.set_remote_parameters("/franka_control", **{"reflex.workspace_max": [0.9, 0.9, 1.3]})
    assert all(status < 500 for _, status, _ in statuses), [s for s in statuses if s[1] >= 500]
    assert any(r.startswith("start: ") and "reflex" in r for r in refused), refused  # it happened, and was answered
    assert robot.ok("startimp") == "Started impedance"  # inside the box again: impedance control runs
    assert wait_until(lambda: health(robot)["robot_mode"] == "impedance", 2.0), health(robot)


def test_startimp_clears_a_reflex_first_as_the_original(robot, ros):
    """The original's /startimp clears errors, then launches the controller afresh."""
    trip_a_reflex(robot, ros)
    assert robot.ok("startimp") == "Started impedance"
    assert wait_until(lambda: health(robot)["robot_mode"] == "impedance", 2.0), health(robot)
    assert robot.ok("stopimp") == "Stopped impedance"
    assert wait_until(lambda: health(robot)["robot_mode"] == "idle", 2.0), health(robot)
    assert robot.ok("startimp") == "Started impedance"
    assert wait_until(lambda: health(robot)["robot_mode"] == "impedance", 2.0), health(robot)
