"""Grip force of the MuJoCo grippers: a GripperCommand's max_effort is the squeeze each jaw puts on
an object (the calibration in backends/mujoco_grippers.py). Real physics through the backend's own
command_gripper; no ROS. Gravity is off so that only the squeeze acts on the cube and the arm."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from isaac_franka_bridge.backends.mujoco_backend import CUBE_SIZE, MujocoWorld
from isaac_franka_bridge.world import DEFAULT_RESET_JOINT_TARGET, one_robot_world

SETTLE_STEPS = 2000  # [1 ms] long enough for either gripper to close on the cube and come to rest


def grasp(gripper: str, closed_position: float, max_effort: float) -> tuple[float, np.ndarray]:
    """Each jaw's normal force [N] on the scene's 4 cm cube held at the TCP once at rest, and the
    gripper's joint positions then."""
    backend = MujocoWorld(one_robot_world(gripper)).robots[0]
    m, d = backend.model, backend.data
    m.opt.gravity[:] = 0.0
    backend.set_arm_configuration(np.array(DEFAULT_RESET_JOINT_TARGET))
    site, cube = m.site("ee").id, m.body("cube").id
    address = m.jnt_qposadr[m.body_jntadr[cube]]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, d.site_xmat[site])
    d.qpos[address : address + 7] = [*d.site_xpos[site], *quat]  # the cube's faces toward the jaws
    mujoco.mj_forward(m, d)
    backend.command_gripper(closed_position, max_effort)
    mujoco.mj_step(m, d, SETTLE_STEPS)  # the arm unactuated, the gripper as commanded
    force, total = np.zeros(6), 0.0
    cube_geom = m.geom("cube").id
    for i in range(d.ncon):
        if cube_geom in (d.contact[i].geom1, d.contact[i].geom2):
            mujoco.mj_contactForce(m, d, i, force)
            total += force[0]
    return total / 2.0, backend.gripper_positions()  # two jaws


@pytest.mark.parametrize(
    ("gripper", "closed_position", "max_effort", "expected"),
    [
        ("Robotiq", 0.8, 45.3, 45.3),  # the original Robotiq server's force byte 30
        ("Robotiq", 0.8, 25.0, 25.0),
        ("Robotiq", 0.8, 0.0, 45.0),  # no max_effort: gym-hil's own force limit
        ("Franka", 0.005, 130.0, 130.0),  # the original Franka server's grasp
        ("Franka", 0.005, 40.0, 40.0),
        ("Franka", 0.005, 0.0, 70.0),  # a move: the hand's continuous force
    ],
)
def test_max_effort_is_the_squeeze_on_the_object(gripper, closed_position, max_effort, expected):
    assert grasp(gripper, closed_position, max_effort)[0] == pytest.approx(expected, rel=0.1)


def test_the_franka_hand_grasping_hard_reads_the_objects_width():
    _, fingers = grasp("Franka", 0.005, 130.0)
    assert 2.0 * fingers == pytest.approx([CUBE_SIZE, CUBE_SIZE], abs=0.001)  # width = 2 x finger joint
