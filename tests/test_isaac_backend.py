"""The Isaac Sim backend, as far as it can be checked without a GPU.

Isaac Sim cannot start without an NVIDIA RTX GPU and driver (and is not installed in the CPU
development environment), so these tests check the import guard, the interface and the backend's
pure-numpy geometry only. The real check of the backend (physics, kinematics, Jacobian, tracking,
external forces) is scripts/gpu_check.sh, run on a GPU host.
"""

from __future__ import annotations

import inspect
import os
import re

import mujoco
import numpy as np
import pytest

from franka_server_ros2.camera_specs import load_cameras
from isaac_franka_bridge.backends import check_backend, create_world
from isaac_franka_bridge.backends.base import PhysicsRobot, PhysicsWorld
from isaac_franka_bridge.backends.isaac_backend import (
    IsaacRobot,
    IsaacWorld,
    clamp_motor_torque,
    matrix_to_quat_xyzw,
    quat_multiply_wxyz,
    quat_wxyz_to_matrix,
    shift_jacobian,
)
from isaac_franka_bridge.world import load_world, one_robot_world

CONFIG = os.path.join(os.path.dirname(__file__), "..", "config")
CAMERAS = os.path.join(CONFIG, "cameras.yaml")
DUAL_ARM = os.path.join(CONFIG, "worlds", "dual_arm.yaml")


def isaac_sim_installed() -> bool:
    """True where Isaac Sim itself (not only the ROS 2 bundle of isaacsim-ros2) can be imported."""
    try:
        from isaacsim import SimulationApp  # noqa: F401
    except ImportError:
        return False
    return True


def test_isaac_backend_without_isaac_sim_fails_with_a_clear_message():
    if isaac_sim_installed():
        pytest.skip("Isaac Sim is installed here: the guard does not apply (scripts/gpu_check.sh checks the backend)")
    with pytest.raises(RuntimeError) as error:
        create_world("isaac", one_robot_world("Franka"))
    message = str(error.value)
    assert "Isaac Sim 6 is not installed" in message
    assert "NVIDIA RTX GPU" in message
    assert "backend:=mujoco" in message


@pytest.mark.parametrize(("own", "interface"), [(IsaacRobot, PhysicsRobot), (IsaacWorld, PhysicsWorld)])
def test_isaac_backend_defines_every_abstract_method_of_the_interface(own, interface):
    assert issubclass(own, interface)
    assert not own.__abstractmethods__
    for name in sorted(interface.__abstractmethods__):
        implementation = getattr(own, name)
        assert implementation is not getattr(interface, name), f"{name} is not overridden"
        expected = list(inspect.signature(getattr(interface, name)).parameters)
        parameters = list(inspect.signature(implementation).parameters)
        assert parameters[: len(expected)] == expected, f"{name}{parameters} does not take the interface's {expected}"
    parameters = inspect.signature(own.__init__).parameters
    assert parameters["timestep"].default == 0.001
    assert parameters["headless"].default is True


@pytest.mark.parametrize(
    ("world", "reason"),
    [
        (one_robot_world("Robotiq"), "the isaac backend mounts no gripper_type 'Robotiq' (it has Franka)"),
        (
            one_robot_world("Franka", load_cameras(CAMERAS)),
            "the isaac backend renders no cameras: set cameras_config:=none",
        ),
        (load_world(DUAL_ARM), "the isaac backend simulates at most 1 robot(s); the world has 2"),
    ],
)
def test_a_world_the_isaac_backend_cannot_simulate_is_refused_before_isaac_sim_loads(world, reason):
    """Capabilities are data: the refusal comes before any import of Isaac Sim (one FATAL line at start)."""
    with pytest.raises(ValueError, match=re.escape(reason)):
        check_backend("isaac", world)


def test_quaternion_helpers_agree_with_each_other():
    rng = np.random.default_rng(0)
    for _ in range(50):
        wxyz = rng.normal(size=4)
        wxyz /= np.linalg.norm(wxyz)
        rotation = quat_wxyz_to_matrix(wxyz)
        np.testing.assert_allclose(rotation @ rotation.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(rotation) == pytest.approx(1.0)
        xyzw = matrix_to_quat_xyzw(rotation)
        expected = np.array([*wxyz[1:], wxyz[0]]) * np.sign(wxyz[0])
        np.testing.assert_allclose(xyzw, expected, atol=1e-9)
        other = rng.normal(size=4)
        product = quat_multiply_wxyz(wxyz, other / np.linalg.norm(other))[0]
        np.testing.assert_allclose(quat_wxyz_to_matrix(product), rotation @ quat_wxyz_to_matrix(other), atol=1e-12)


ARM_XML = """
<mujoco>
  <worldbody>
    <body name="a" pos="0 0 0.3">
      <joint type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="b" pos="0.3 0 0" quat="0.9 0.3 0.2 0.1">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="box" pos="0.1 0.02 -0.03" size="0.1 0.03 0.02"/>
        <site name="ee" pos="0.25 -0.04 0.1"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_jacobian_shift_from_the_centre_of_mass_to_the_end_effector():
    """PhysX gives link Jacobians at the centre of mass; shifted to the EE they equal the EE Jacobian.

    Checked against MuJoCo's exact body-COM and site Jacobians of a small arm."""
    model = mujoco.MjModel.from_xml_string(ARM_XML)
    data = mujoco.MjData(model)
    data.qpos[:] = [0.4, -0.7]
    mujoco.mj_forward(model, data)
    body, site = model.body("b").id, model.site("ee").id
    jac_com = np.zeros((6, model.nv))
    jac_ee = np.zeros((6, model.nv))
    mujoco.mj_jacBodyCom(model, data, jac_com[:3], jac_com[3:], body)
    mujoco.mj_jacSite(model, data, jac_ee[:3], jac_ee[3:], site)
    assert np.linalg.norm(data.xipos[body] - data.site_xpos[site]) > 0.1  # a real shift
    shifted = shift_jacobian(jac_com, data.xipos[body], data.site_xpos[site])
    np.testing.assert_allclose(shifted, jac_ee, atol=1e-12)


def test_torque_limits_apply_to_the_motor_total_including_gravity():
    gravity = np.array([0.0, -30.0, 0.0, 20.0, 0.0, 2.0, 0.0])
    tau = np.array([100.0, -70.0, 5.0, 80.0, -20.0, 11.0, 0.5])
    applied = clamp_motor_torque(tau, gravity)
    np.testing.assert_allclose(applied + gravity, [87.0, -87.0, 5.0, 87.0, -12.0, 12.0, 0.5])
