"""The impedance law of controller.md against hand-computed cases (pure math, no ROS, no simulator)."""

import math

import numpy as np
import pytest

from isaac_franka_bridge.controller import COMPLIANCE_PARAMETERS, DEFAULT_COMPLIANCE, CartesianImpedanceController
from isaac_franka_bridge.controller.impedance import damped_pinv_of_transpose, quat_multiply, quat_slerp

IDENTITY_Q = np.array([0.0, 0.0, 0.0, 1.0])
# a Jacobian whose first six columns are the identity: task-space quantities read off directly
J = np.hstack([np.eye(6), np.zeros((6, 1))])
ZERO7 = np.zeros(7)


def settled(c: CartesianImpedanceController) -> CartesianImpedanceController:
    """The filtered gains at their targets, as a while after a start (isolates the law from the ramp)."""
    c.stiffness, c.damping, c.ki = c.stiffness_target.copy(), c.damping_target.copy(), c.ki_target.copy()
    c.nullspace_stiffness = c.nullspace_stiffness_target
    c.joint1_nullspace_stiffness = c.joint1_nullspace_stiffness_target
    return c


def controller(**params) -> CartesianImpedanceController:
    c = CartesianImpedanceController(params, delta_tau_max=1e9)
    c.start(ZERO7, np.zeros(3), IDENTITY_Q)
    return settled(c)


def task_force(c: CartesianImpedanceController, position=(0.0, 0.0, 0.0), quat=IDENTITY_Q, dq=ZERO7) -> np.ndarray:
    rotation = np.eye(3)
    return c.update(ZERO7, dq, np.asarray(position, float), rotation, np.asarray(quat, float), J, ZERO7)[:6]


def test_parameter_table_matches_the_contract():
    expected = {
        "translational_stiffness": (2000, 0, 6000),
        "translational_damping": (89, 0, 400),
        "rotational_stiffness": (150, 0, 300),
        "rotational_damping": (7, 0, 30),
        "nullspace_stiffness": (0.2, 0, 100),
        "joint1_nullspace_stiffness": (100, 0, 100),
        "translational_Ki": (0, 0, 100),
        "rotational_Ki": (0, 0, 100),
    }
    for kind, default in (("translational", 0.01), ("rotational", 0.05)):
        for sign in ("", "neg_"):
            for axis in "xyz":
                expected[f"{kind}_clip_{sign}{axis}"] = (default, 0, 0.1)
    assert {p.name: (p.default, p.low, p.high) for p in COMPLIANCE_PARAMETERS} == expected
    assert len(DEFAULT_COMPLIANCE) == 20


def test_translational_error_is_clipped_asymmetrically():
    c = controller(translational_clip_x=0.01, translational_clip_neg_x=0.002, translational_damping=0.0)
    # robot 5 cm beyond the target along +x: error +0.05 clipped to +0.01 -> force -K * 0.01
    assert task_force(c, position=[0.05, 0, 0])[0] == pytest.approx(-2000 * 0.01)
    c = controller(translational_clip_x=0.01, translational_clip_neg_x=0.002, translational_damping=0.0)
    # robot 5 cm short of it: error -0.05 clipped to -0.002 -> force +K * 0.002
    assert task_force(c, position=[-0.05, 0, 0])[0] == pytest.approx(2000 * 0.002)


def test_rotational_error_sign_and_clip():
    c = controller(rotational_clip_z=0.1, rotational_clip_neg_z=0.1, rotational_damping=0.0)
    angle = 0.05  # robot rotated +0.05 rad about z from the target: restoring torque is negative
    quat = np.array([0, 0, math.sin(angle / 2), math.cos(angle / 2)])
    rotation = np.array([[math.cos(angle), -math.sin(angle), 0], [math.sin(angle), math.cos(angle), 0], [0, 0, 1]])
    torque = c.update(ZERO7, ZERO7, np.zeros(3), rotation, quat, J, ZERO7)[5]
    assert torque == pytest.approx(-150 * math.sin(angle / 2), rel=1e-6)  # e_r = R (q_err.xyz) ~ sin(a/2)
    c = controller(rotational_clip_z=0.01, rotational_clip_neg_z=0.01, rotational_damping=0.0)
    torque = c.update(ZERO7, ZERO7, np.zeros(3), rotation, quat, J, ZERO7)[5]
    assert torque == pytest.approx(-150 * 0.01)


def test_measured_quaternion_sign_flip_gives_the_same_torque():
    angle = 0.04
    quat = np.array([math.sin(angle / 2), 0, 0, math.cos(angle / 2)])
    rotation = np.array([[1, 0, 0], [0, math.cos(angle), -math.sin(angle)], [0, math.sin(angle), math.cos(angle)]])
    a = controller(rotational_damping=0.0).update(ZERO7, ZERO7, np.zeros(3), rotation, quat, J, ZERO7)
    b = controller(rotational_damping=0.0).update(ZERO7, ZERO7, np.zeros(3), rotation, -quat, J, ZERO7)
    np.testing.assert_allclose(a, b)
    assert a[3] < 0


def test_target_quaternion_is_normalised_and_aligned_with_the_previous_target():
    c = controller()
    c.set_target(np.zeros(3), np.array([0.0, 0.0, 0.0, -2.0]))  # same rotation, opposite sign, not unit
    np.testing.assert_allclose(c.quat_d_target, IDENTITY_Q)
    with pytest.raises(ValueError):
        c.set_target(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError):
        c.set_target(np.array([0.0, np.nan, 0.0]), IDENTITY_Q)


def test_integral_is_clamped_and_reset_by_a_new_target():
    c = controller(translational_Ki=10.0, rotational_Ki=10.0, translational_stiffness=0.0, translational_damping=0.0)
    c.stiffness[:] = 0.0  # isolate the integral term
    for _ in range(100):
        force = task_force(c, position=[0.05, 0, 0])
    assert c.error_integral[0] == pytest.approx(0.1)  # 100 ticks x 0.01 (clip), clamped at 0.1
    assert force[0] == pytest.approx(-10.0 * 0.1)
    c.set_target(np.zeros(3), IDENTITY_Q)
    assert not c.error_integral.any()
    # rotational integral clamps at 0.3
    angle = 0.1
    quat = np.array([0, 0, math.sin(angle / 2), math.cos(angle / 2)])
    for _ in range(100):
        c.update(ZERO7, ZERO7, np.zeros(3), np.eye(3), quat, J, ZERO7)
    assert c.error_integral[5] == pytest.approx(0.3)


def test_torque_rate_is_limited_to_one_newton_metre_per_tick():
    c = CartesianImpedanceController()
    c.start(ZERO7, np.zeros(3), IDENTITY_Q)
    settled(c)
    tau = c.update(ZERO7, ZERO7, np.array([0.05, 0, 0]), np.eye(3), IDENTITY_Q, J, ZERO7)
    assert tau[0] == pytest.approx(-1.0)  # wanted -20 N, got the first 1 Nm step
    tau = c.update(ZERO7, ZERO7, np.array([0.05, 0, 0]), np.eye(3), IDENTITY_Q, J, ZERO7)
    assert tau[0] == pytest.approx(-2.0)


def test_torque_rate_limit_counts_from_the_torque_last_commanded():
    """The real controller saturates against tau_J_d, the robot's last commanded torque (a joint reset's,
    say), not against zero: a start hands it over without a jump."""
    c = CartesianImpedanceController()
    last = np.array([5.0, -3.0, 0.0, 2.0, 0.0, 0.0, 0.0])
    c.start(ZERO7, np.zeros(3), IDENTITY_Q, tau_commanded=last)
    tau = c.update(ZERO7, ZERO7, np.zeros(3), np.eye(3), IDENTITY_Q, J, ZERO7)
    np.testing.assert_allclose(tau, last - np.clip(last, -1.0, 1.0))  # at rest it wants zero: 1 Nm closer


def test_a_fresh_start_ramps_the_gains_up_from_zero_and_the_null_space_from_20():
    """As the original controller at every launch (boot, after a joint reset, /startimp): stiffness and
    damping start at zero, the null-space stiffnesses at 20, and all filter toward the parameters."""
    c = CartesianImpedanceController({"translational_stiffness": 3000.0, "nullspace_stiffness": 0.2})
    c.start(ZERO7, np.zeros(3), IDENTITY_Q)
    assert not c.stiffness.any() and not c.damping.any() and not c.ki.any()
    assert c.nullspace_stiffness == 20.0 and c.joint1_nullspace_stiffness == 20.0
    for _ in range(200):
        c.update(ZERO7, ZERO7, np.zeros(3), np.eye(3), IDENTITY_Q, J, ZERO7)
    rise = 1 - (1 - 0.005) ** 200
    assert c.stiffness[0] == pytest.approx(3000.0 * rise)
    assert c.damping[3] == pytest.approx(7.0 * rise)
    assert c.nullspace_stiffness == pytest.approx(0.2 + (20.0 - 0.2) * (1 - rise))
    assert c.joint1_nullspace_stiffness == pytest.approx(100.0 + (20.0 - 100.0) * (1 - rise))
    # the first tick after a start pulls with no stiffness at all: an offset makes no force yet
    c.start(ZERO7, np.array([0.1, 0.0, 0.0]), IDENTITY_Q)
    c.set_target(np.zeros(3), IDENTITY_Q)
    assert task_force(c, position=[0.1, 0, 0])[0] == pytest.approx(0.0)


def test_seeding_after_error_recovery_keeps_the_gains():
    """The original's starting() (what error recovery triggers) moves the equilibrium, not the gains."""
    c = controller()
    c.seed(ZERO7, np.array([0.3, 0.1, 0.2]), IDENTITY_Q)
    np.testing.assert_allclose(c.position_d, [0.3, 0.1, 0.2])
    np.testing.assert_allclose(c.position_d_target, [0.3, 0.1, 0.2])
    assert c.stiffness[0] == 2000.0 and c.nullspace_stiffness == 0.2


def test_equilibrium_and_gains_follow_first_order_filters():
    c = controller()
    c.set_target(np.array([0.1, 0.0, 0.0]), IDENTITY_Q)
    c.set_params({"translational_stiffness": 3000.0})
    for _ in range(200):
        task_force(c)
    expected = 1 - (1 - 0.005) ** 200  # about 63 % after 200 ticks (the ~200 ms time constant)
    assert c.position_d[0] == pytest.approx(0.1 * expected)
    assert c.stiffness[0] == pytest.approx(2000 + 1000 * expected)
    for _ in range(2000):
        task_force(c)
    assert c.position_d[0] == pytest.approx(0.1, abs=1e-5)


def test_orientation_target_is_slerped():
    half = math.pi / 4
    target = np.array([0, 0, math.sin(half / 2), math.cos(half / 2)])
    np.testing.assert_allclose(quat_slerp(IDENTITY_Q, target, 0.5), [0, 0, math.sin(half / 4), math.cos(half / 4)])
    np.testing.assert_allclose(quat_multiply(IDENTITY_Q, target), target)


def test_null_space_torque_is_the_projected_joint_spring():
    rng = np.random.default_rng(0)
    jac = rng.normal(size=(6, 7))
    q = np.full(7, 0.1)
    c = CartesianImpedanceController(
        {"nullspace_stiffness": 10.0, "joint1_nullspace_stiffness": 4.0}, delta_tau_max=1e9
    )
    c.start(ZERO7, np.zeros(3), IDENTITY_Q)
    settled(c)
    c.stiffness[:] = 0.0
    c.damping[:] = 0.0
    tau = c.update(q, ZERO7, np.zeros(3), np.eye(3), IDENTITY_Q, jac, ZERO7)
    qe = -q
    qe[0] *= 4.0  # joint 1's extra factor
    projector = np.eye(7) - jac.T @ damped_pinv_of_transpose(jac, 0.2)  # damped, as the real controller
    np.testing.assert_allclose(tau, projector @ (10.0 * qe))
    # undamped, the projector removes every task-space wrench
    exact = np.eye(7) - jac.T @ damped_pinv_of_transpose(jac, 0.0)
    np.testing.assert_allclose(np.linalg.pinv(jac.T) @ exact @ qe, 0.0, atol=1e-9)
    np.testing.assert_allclose(damped_pinv_of_transpose(jac, 0.0), np.linalg.pinv(jac.T), atol=1e-9)


def test_parameters_out_of_range_or_unknown_are_refused_and_change_nothing():
    c = controller()
    for bad in ({"translational_stiffness": 7000.0}, {"nope": 1.0}, {"rotational_clip_x": float("nan")}):
        with pytest.raises(ValueError):
            c.set_params({"translational_damping": 50.0, **bad})
        assert c.params["translational_damping"] == 89.0
