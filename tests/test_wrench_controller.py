"""HIL-SERL's egg-flip Cartesian wrench law (controller/wrench.py): each branch against hand-computed
cases (pure math), then closed loop on the real MuJoCo model (no ROS)."""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from isaac_franka_bridge.controller import CartesianWrenchController, WrenchControllerParams
from isaac_franka_bridge.controller.impedance import quat_multiply
from isaac_franka_bridge.controller.wrench import box_euler_vector, tf2_rpy

# a Jacobian whose first six columns are the identity: task-space quantities read off directly
J = np.hstack([np.eye(6), np.zeros((6, 1))])
ZERO7 = np.zeros(7)
Q_TARGET = np.array([0.0, -0.3, 0.0, -2.1, 0.0, 1.6, 0.8])
BOX_CENTRE = np.array([0.55, 0.0, 0.525])
EULER_CENTRE = np.array([2.25, -2.1, -0.8])
UNLIMITED = WrenchControllerParams(delta_tau_max=1e9)  # isolates the law from the torque-rate limit


def rotation_for(euler_vector) -> np.ndarray:
    """A rotation whose box Euler vector (after the -pi/4 oddity) is `euler_vector`."""
    c, s = math.cos(math.pi / 4), math.sin(math.pi / 4)
    roll, pitch, yaw = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ np.asarray(euler_vector, float)
    return Rotation.from_euler("xyz", [roll, pitch, yaw]).as_matrix()


R_CENTRE = rotation_for(EULER_CENTRE)
QUAT_CENTRE = Rotation.from_matrix(R_CENTRE).as_quat()


def tick(c, position=BOX_CENTRE, rotation=R_CENTRE, q=Q_TARGET, dq=ZERO7, coriolis=ZERO7, dt=0.001):
    quat = QUAT_CENTRE if rotation is R_CENTRE else Rotation.from_matrix(rotation).as_quat()
    return c.update(q, dq, np.asarray(position, float), rotation, quat, J, coriolis, dt)


def started(params: WrenchControllerParams = UNLIMITED) -> CartesianWrenchController:
    c = CartesianWrenchController(params)
    c.start(Q_TARGET, BOX_CENTRE, QUAT_CENTRE)
    return c


def past_reset(params: WrenchControllerParams = UNLIMITED) -> CartesianWrenchController:
    """Started, then one second inside the box at the target joints: the joint reset phase is over."""
    c = started(params)
    for _ in range(1000):
        tick(c)
    assert c.mode == "inside"
    return c


# ---------------------------------------------------------------------- parameters and the Euler oddity
def test_parameters_are_the_yaml_and_header_values():
    p = WrenchControllerParams()
    assert p.max_duration_between_commands == 0.1
    assert (p.max_force, p.max_torque) == (20.0, 5.0)
    assert p.min_translation == (0.4, -0.08, 0.45) and p.max_translation == (0.7, 0.08, 0.6)
    assert p.min_rotation == (2.1, -2.7, -0.9) and p.max_rotation == (2.4, -1.5, -0.7)
    assert (p.p_translation, p.p_rotation) == (200.0, 50.0)
    assert p.k_gains == (600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0)
    assert p.d_gains == (50.0, 50.0, 50.0, 20.0, 20.0, 20.0, 10.0)
    assert p.target_joint_positions == tuple(Q_TARGET)
    assert (p.nullspace_stiffness, p.joint1_nullspace_stiffness, p.delta_tau_max) == (5.0, 5.0, 1.0)
    for bad in (
        {"k_gains": (1.0,) * 6},
        {"min_translation": (0.0, math.nan, 0.0)},
        {"p_rotation": -1.0},
        {"max_force": math.inf},
        {"min_rotation": (3.0, -2.7, -0.9)},  # above max_rotation
    ):
        with pytest.raises(ValueError):
            WrenchControllerParams(**bad)


def test_rpy_is_tf2_getrpy():
    rng = np.random.default_rng(0)
    for rotation in Rotation.random(50, random_state=rng):
        assert tf2_rpy(rotation.as_matrix()) == pytest.approx(rotation.as_euler("xyz"), abs=1e-9)
    # gimbal lock: yaw 0, pitch -pi/2 for R[2,0] = +1, roll from R[2,1], R[2,2]
    locked = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert tf2_rpy(locked) == pytest.approx([math.atan2(0.0, 0.0), -math.pi / 2, 0.0])


def test_euler_vector_is_rotated_by_minus_pi_over_4_after_the_roll_wrap():
    roll, pitch, yaw = -3.0, 0.1, -0.8  # a negative roll is moved up by 2 pi first
    rotation = Rotation.from_euler("xyz", [roll, pitch, yaw]).as_matrix()
    wrapped = roll + 2 * math.pi
    expected = [(wrapped + pitch) / math.sqrt(2), (pitch - wrapped) / math.sqrt(2), yaw]
    assert box_euler_vector(rotation) == pytest.approx(expected)
    assert box_euler_vector(R_CENTRE) == pytest.approx(EULER_CENTRE)
    # a gripper pointing straight down, x along the base x: roll pi, pitch 0, yaw 0 -> (2.22, -2.22, 0):
    # its yaw 0 is outside the box [-0.9, -0.7]; turned by +45 deg about its own z it is inside
    down = np.diag([1.0, -1.0, -1.0])
    assert box_euler_vector(down) == pytest.approx([math.pi / math.sqrt(2), -math.pi / math.sqrt(2), 0.0])
    c = past_reset()
    tick(c, rotation=down)
    assert c.outside_box and c.mode == "outside"
    turned = down @ Rotation.from_euler("z", math.pi / 4).as_matrix()
    tick(c, rotation=turned)
    assert not c.outside_box and box_euler_vector(turned)[2] == pytest.approx(-math.pi / 4)


def test_box_test_per_axis_and_boundary_is_inside():
    c = past_reset()
    for axis in range(3):
        for bound, step in ((c.min_translation, -1e-4), (c.max_translation, 1e-4)):
            position = BOX_CENTRE.copy()
            position[axis] = bound[axis]
            tick(c, position=position)
            assert not c.outside_box
            position[axis] += step
            tick(c, position=position)
            assert c.outside_box
        for bound, step in ((c.min_rotation, -1e-4), (c.max_rotation, 1e-4)):
            euler = EULER_CENTRE.copy()
            euler[axis] = bound[axis] + step
            tick(c, rotation=rotation_for(euler))
            assert c.outside_box
            euler[axis] = bound[axis] - 10 * step
            tick(c, rotation=rotation_for(euler))
            assert not c.outside_box


# ---------------------------------------------------------------------- the joint reset phase
def test_reset_phase_is_a_clipped_joint_impedance_without_null_space():
    c = started()
    q = Q_TARGET + np.array([0.01, -0.1, 0.0, 0.0, 0.0, 0.0, -0.05])
    dq = np.array([0.1, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0])
    coriolis = np.arange(7) * 0.1
    tau = tick(c, q=q, dq=dq, coriolis=coriolis)
    assert c.mode == "reset"
    dq_filtered = 0.99 * dq  # from zero, the new sample weighs 0.99
    spring = np.clip(np.array(c.params.k_gains) * (Q_TARGET - q), -10, 10)  # 600 * -0.01 = -6; +0.1 -> +10
    damper = np.clip(np.array(c.params.d_gains) * -dq_filtered, -10, 10)  # 50 * 0.99 -> +10 (clipped)
    assert spring[:2] == pytest.approx([-6.0, 10.0]) and damper[2] == pytest.approx(10.0)
    assert tau == pytest.approx(coriolis + spring + damper)
    # the "filter" keeps 1 % of its past: a second sample
    dq2 = np.full(7, 0.02)
    tau = tick(c, q=Q_TARGET, dq=dq2)
    assert c.dq_filtered == pytest.approx(0.01 * 0.99 * dq + 0.99 * dq2)
    assert tau == pytest.approx(np.clip(np.array(c.params.d_gains) * -c.dq_filtered, -10, 10))


def test_reset_phase_lasts_one_second_inside_the_box_and_restarts_on_reset():
    c = started()
    modes = [(tick(c), c.mode)[1] for _ in range(1000)]
    assert modes[:999] == ["reset"] * 999 and modes[999] == "inside"  # ros::Duration nanoseconds: < 1.0 s
    c.reset()
    outside = BOX_CENTRE + np.array([0.0, 0.0, 0.2])
    for _ in range(500):  # time outside the box does not count
        tick(c, position=outside)
        assert c.mode == "outside"
    assert c.time_since_last_reset_call_ns == 0
    modes = [(tick(c), c.mode)[1] for _ in range(1000)]
    assert modes[:999] == ["reset"] * 999 and modes[999] == "inside"
    # the phase ends after a second inside, even when split by an excursion outside
    c.reset()
    for _ in range(600):
        tick(c)
    tick(c, position=outside)
    assert c.mode == "outside"
    modes = [(tick(c), c.mode)[1] for _ in range(400)]
    assert modes[:399] == ["reset"] * 399 and modes[399] == "inside"


# ---------------------------------------------------------------------- outside the box
def test_outside_pulls_toward_the_box_with_margins_and_clipped_errors():
    c = past_reset()
    # x 1 mm below the box: target 2 cm inside it -> error -0.021 -> +4.2 N; y, z inside stay put
    tau = tick(c, position=[0.399, 0.0, 0.5])
    assert c.mode == "outside"
    assert tau[:3] == pytest.approx([200 * 0.021, 0.0, 0.0])
    # z far above: error clipped to 0.03 -> -6 N (z is not freed outside the box); x at 0.41, inside
    # the box but short of its margin 0.42, is pulled too
    tau = tick(c, position=[0.41, 0.0, 0.9])
    assert tau[:3] == pytest.approx([200 * 0.01, 0.0, -200 * 0.03])
    # high-side margin of z is 1 cm: at 0.6 + 1e-4 the target is 0.59
    tau = tick(c, position=[0.55, 0.0, 0.6001])
    assert tau[2] == pytest.approx(-200 * 0.0101)
    # rotation: 0.05 rad beyond a component's bound -> target 0.01 inside -> error 0.06 (the clip) -> -3 Nm,
    # applied about the base axis of the same index, all three components (none freed outside the box)
    euler = np.array([2.4 + 0.05, -2.7 - 0.002, -0.7 + 0.2])
    tau = tick(c, rotation=rotation_for(euler))
    assert tau[3:6] == pytest.approx([-50 * 0.06, 50 * 0.012, -50 * 0.06], abs=1e-9)


def test_outside_ignores_a_fresh_wrench_command():
    c = past_reset()
    c.set_target_wrench([10.0, 0.0, 5.0, 0.0, 0.0, 0.0])
    tau = tick(c, position=[0.55, 0.0, 0.3])
    assert c.mode == "outside"
    assert tau[:6] == pytest.approx([0.0, 0.0, 200 * 0.03, 0.0, 0.0, 0.0], abs=1e-9)


# ---------------------------------------------------------------------- inside the box
def test_inside_pulls_toward_the_centre_with_z_and_the_second_rotation_free():
    c = past_reset()
    assert tick(c) == pytest.approx(np.zeros(7), abs=1e-9)  # at the centre and the target joints: nothing
    euler = EULER_CENTRE + np.array([0.1, 0.5, -0.02])
    tau = tick(c, position=[0.45, 0.05, 0.46], rotation=rotation_for(euler))
    assert c.mode == "inside"
    assert tau[:6] == pytest.approx([200 * 0.03, -200 * 0.03, 0.0, -50 * 0.06, 0.0, 50 * 0.02], abs=1e-9)


def test_null_space_pulls_toward_the_target_joints():
    c = past_reset()
    q = Q_TARGET + np.array([0.1, 0, 0, 0, 0, 0, 0.2])
    dq = np.array([0.3, 0, 0, 0, 0, 0, 0.5])
    tau = tick(c, q=q, dq=dq)
    # with J = [I | 0] and pinv damped by 0.2, the projector is diag(1 - 1/1.04, ..., 1)
    leak = 1.0 - 1.0 / 1.04
    k, d = 5.0, 2.0 * math.sqrt(5.0)
    assert tau[6] == pytest.approx(k * -0.2 - d * 0.5)
    assert tau[0] == pytest.approx(leak * (k * 5.0 * -0.1 - d * 2.0 * math.sqrt(5.0) * 0.3))


def test_fresh_command_adds_the_wrench_with_fz_and_ty_limited():
    c = past_reset()
    c.set_target_wrench([5.0, -3.0, -12.0, 1.0, 4.0, -2.0])
    assert c.wrench_d == pytest.approx([5.0, -3.0, -12.0, 1.0, 4.0, -2.0])
    tau = tick(c)
    assert c.mode == "wrench"
    assert tau[:6] == pytest.approx([5.0, -3.0, -1.0, 1.0, 1.5, -2.0])
    assert c.wrench_d == pytest.approx([5.0, -3.0, -1.0, 1.0, 1.5, -2.0])  # written back, as the original
    # HIL-SERL's FrankaWrenchEnv at full action: ACTION_SCALE [13, 0, 12, 0, 3.5, 0]
    c.set_target_wrench([13.0, 0.0, 12.0, 0.0, 3.5, 0.0])
    assert tick(c)[:6] == pytest.approx([13.0, 0.0, 12.0, 0.0, 1.5, 0.0])
    c.set_target_wrench([-13.0, 0.0, -12.0, 0.0, -3.5, 0.0])
    assert tick(c)[:6] == pytest.approx([-13.0, 0.0, -1.0, 0.0, -3.5, 0.0])


def test_target_wrench_is_clipped_to_the_rate_limits():
    c = past_reset()
    c.set_target_wrench([30.0, -25.0, 3.0, 6.0, -7.0, 0.5])
    assert c.wrench_d == pytest.approx([20.0, -20.0, 3.0, 5.0, -5.0, 0.5])
    c = CartesianWrenchController(WrenchControllerParams(max_force=2.0, max_torque=0.1))
    c.set_target_wrench([3.0, -3.0, 1.0, 1.0, -1.0, 0.05])
    assert c.wrench_d == pytest.approx([2.0, -2.0, 1.0, 0.1, -0.1, 0.05])


@pytest.mark.parametrize("dt, fresh_ticks", [(0.001, 100), (0.01, 10), (0.004, 25)])
def test_command_times_out_after_max_duration(dt, fresh_ticks):
    c = past_reset()
    c.set_target_wrench([4.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    modes = [(tick(c, dt=dt), c.mode)[1] for _ in range(fresh_ticks + 1)]
    # still fresh at exactly max_duration_between_commands (the original's test is a strict '>')
    assert modes == ["wrench"] * fresh_ticks + ["inside"]
    assert tick(c, dt=dt)[0] == pytest.approx(0.0)
    c.set_target_wrench([4.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # a new command restarts the timer
    assert tick(c, dt=dt)[0] == pytest.approx(4.0) and c.mode == "wrench"


def test_start_zeroes_the_target_and_the_timers():
    c = past_reset()
    c.set_target_wrench([4.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    c.start(Q_TARGET, BOX_CENTRE, QUAT_CENTRE)
    assert c.wrench_d == pytest.approx(np.zeros(6))
    assert c.time_since_last_command_ns == 0 and c.time_since_last_reset_call_ns == 0
    tick(c)
    assert c.mode == "reset"


def test_torque_rate_is_limited_against_the_last_commanded_torque():
    c = past_reset(WrenchControllerParams())
    c.set_target_wrench([20.0, 0.0, 0.0, 0.0, 0.0, -5.0])
    assert tick(c)[[0, 5]] == pytest.approx([1.0, -1.0])
    assert tick(c)[[0, 5]] == pytest.approx([2.0, -2.0])
    # start counts from the robot's last commanded torque (its tau_J_d)
    c = CartesianWrenchController()
    c.start(Q_TARGET, BOX_CENTRE, [0, 0, 0, 1], tau_commanded=np.full(7, 3.0))
    assert tick(c) == pytest.approx(np.full(7, 2.0))


@pytest.mark.parametrize(
    "bad", [[1.0] * 5, [1.0] * 7, [1.0, 2.0, math.nan, 0, 0, 0], [0, 0, 0, math.inf, 0, 0], "abcdef", None, [[1.0] * 6]]
)
def test_bad_wrench_changes_nothing(bad):
    c = past_reset()
    c.set_target_wrench([1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
    tick(c)
    before_wrench, before_timer = c.wrench_d.copy(), c.time_since_last_command_ns
    with pytest.raises(ValueError):
        c.set_target_wrench(bad)
    assert np.array_equal(c.wrench_d, before_wrench) and c.time_since_last_command_ns == before_timer


@pytest.mark.parametrize("dt", [0.0, -0.001, math.nan, math.inf])
def test_bad_period_is_refused(dt):
    with pytest.raises(ValueError):
        tick(past_reset(), dt=dt)


# ---------------------------------------------------------------------- closed loop, real MuJoCo physics
# With gripper None the model's end-effector frame is the bare flange (as the robot reports O_T_EE without
# an end effector, and as the egg-flip robot ran: load_gripper false). At the target joints it sits at
# about [0.443, 0, 0.530] with box Euler vector about [2.218, -2.021, -0.810]: inside the original's box.
# (The Franka-hand convention, the flange turned by -pi/4, would put the yaw component at -0.015, outside
# [-0.9, -0.7]: that is how the flange frame was found.)
EE_YAW_OFFSET = 0.0
_RZ = Rotation.from_euler("z", EE_YAW_OFFSET)
RZ_MATRIX, RZ_QUAT = _RZ.as_matrix(), _RZ.as_quat()


@pytest.fixture(scope="module")
def world():
    from isaac_franka_bridge.backends.mujoco_backend import MujocoWorld
    from isaac_franka_bridge.world import one_robot_world

    return MujocoWorld(one_robot_world("None"))


class Loop:
    """The simulation loop of one arm running the wrench controller, from the target joints."""

    def __init__(self, world) -> None:
        self.world, self.robot = world, world.robots[0]
        self.robot.set_external_wrench(np.zeros(6))
        self.robot.set_arm_configuration(Q_TARGET)
        self.ctrl = CartesianWrenchController()
        s = self.robot.measure()
        self.ctrl.start(s.q, s.position, quat_multiply(s.quat, RZ_QUAT))
        self.modes: list[str] = []

    def run(self, seconds: float, wrench=None):
        """Ticks for `seconds`; `wrench` (if any) is commanded at 10 Hz as HIL-SERL's env does."""
        for i in range(round(seconds * 1000)):
            if wrench is not None and i % 100 == 0:
                self.ctrl.set_target_wrench(wrench)
            self.world.begin_step()
            s = self.robot.measure()
            rotation, quat = s.rotation @ RZ_MATRIX, quat_multiply(s.quat, RZ_QUAT)
            tau = self.ctrl.update(s.q, s.dq, s.position, rotation, quat, s.jacobian, s.coriolis)
            self.robot.set_torque(tau)
            self.world.end_step()
            self.modes.append(self.ctrl.mode)
        return self.robot.measure()


def test_reset_pose_of_the_bare_flange_is_inside_the_box(world):
    loop = Loop(world)
    s = loop.robot.measure()
    assert s.position == pytest.approx([0.443, 0.0, 0.530], abs=2e-3)
    assert box_euler_vector(s.rotation) == pytest.approx([2.218, -2.021, -0.810], abs=1e-2)
    hand = s.rotation @ Rotation.from_euler("z", -math.pi / 4).as_matrix()  # the hand's EE convention
    assert box_euler_vector(hand) == pytest.approx([2.36, -2.08, -0.015], abs=1e-2)  # yaw outside the box


def test_holds_at_the_target_joints_and_stays_in_the_box(world):
    loop = Loop(world)
    s = loop.run(0.99)
    assert set(loop.modes) == {"reset"}
    assert np.abs(s.q - Q_TARGET).max() < 1e-3 and np.abs(s.dq).max() < 1e-2
    s = loop.run(1.5)  # then P toward the box centre (6 N at most): drifts in x, stays in the box
    assert "outside" not in loop.modes
    assert np.abs(s.dq).max() < 1.0 and s.position[0] > 0.46


def test_pushed_out_of_the_box_it_comes_back(world):
    loop = Loop(world)
    loop.run(1.0)
    loop.robot.set_external_wrench(np.array([0.0, 25.0, 0.0, 0.0, 0.0, 0.0]))  # sideways, 0.15 s
    loop.run(0.15)
    loop.robot.set_external_wrench(np.zeros(6))
    pushed = len(loop.modes)
    s = loop.run(2.5)
    after = loop.modes[pushed:]
    assert "outside" in after[:300]  # its momentum carries it through the y = 0.08 face
    assert "outside" not in after[-1500:]  # back in within a second, and stays in
    assert abs(s.position[1]) < 0.08 and np.abs(s.dq).max() < 0.5


def test_commanded_z_force_moves_the_arm_up_and_down_only_by_one_newton(world):
    loop = Loop(world)
    z0 = loop.run(1.0).position[2]
    s = loop.run(0.2, wrench=[0.0, 0.0, 12.0, 0.0, 0.0, 0.0])  # HIL-SERL's full +z action
    assert s.position[2] > z0 + 0.03
    loop = Loop(world)
    z0 = loop.run(1.0).position[2]
    s = loop.run(0.3, wrench=[0.0, 0.0, -12.0, 0.0, 0.0, 0.0])  # limited to -1 N inside the box
    assert abs(s.position[2] - z0) < 0.01


def test_commanded_minus_x_force_moves_the_arm_to_the_box_face(world):
    loop = Loop(world)
    x0 = loop.run(1.0).position[0]
    s = loop.run(1.0, wrench=[-13.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    # 13 N against the 6 N pull toward the centre: to the x = 0.4 face, where the outside law holds it
    assert s.position[0] < x0 - 0.03 and 0.38 < s.position[0] < 0.42
    assert np.abs(s.dq).max() < 0.5


def test_reset_returns_to_the_target_joints(world):
    loop = Loop(world)
    loop.run(1.0)
    s = loop.run(1.0, wrench=[-13.0, 0.0, 12.0, 0.0, 0.0, 0.0])
    assert np.abs(s.q - Q_TARGET).max() > 0.05
    loop.ctrl.reset()
    start = len(loop.modes)
    last_reset_state = None
    for _ in range(3000):  # until the joint reset phase (one second inside the box) is over
        s = loop.run(0.001)
        if loop.ctrl.mode == "reset":
            last_reset_state = s
        elif last_reset_state is not None:
            break
    assert loop.modes[start:].count("reset") == 999
    assert np.abs(last_reset_state.q - Q_TARGET).max() < 0.01 and np.abs(last_reset_state.dq).max() < 0.05
