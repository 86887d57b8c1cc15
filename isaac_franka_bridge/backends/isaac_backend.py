"""Isaac Sim 6 backend: the Franka Panda + Franka Hand of Isaac Sim's asset library, stepped by PhysX.

Physics only, as the interface says (controller, loop and ROS are shared): it starts Isaac Sim
(`SimulationApp`, which must exist before any other Isaac or `pxr` import, hence the imports inside
the constructor), builds a stage with a table plane, the Franka and a cube to pick, and then each
1 ms tick reads the arm state through the articulation view of `isaacsim.core.prims`, applies the
arm torques as joint efforts and advances PhysX by one physics step without rendering.

Modelling choices, mirroring the MuJoCo backend:
- The robot carries its own weight: gravity is disabled on every link of the robot (payloads and
  objects keep theirs); the gravity torques PhysX computes are added to `tau_measured` and counted
  against the joint torque limits, as on the real arm.
- The end effector is Franka's EE frame for the Franka Hand: the `panda_hand` frame (the flange
  rotated -45 deg about z, as in franka_description) moved 0.1034 m along its z axis.
- Everything is reported in the robot base frame (`panda_link0`); the robot stands at the origin.

Isaac Sim needs an NVIDIA RTX GPU; scripts/gpu_check.sh runs scripts/isaac_smoke.py there.
The Franka asset comes from Isaac Sim's asset root (`get_assets_root_path()`, which honours
`ISAACSIM_ASSET_ROOT`); `ISAAC_FRANKA_USD` or `usd_path` names a local franka.usd instead.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
from typing import Any

import numpy as np

from ..sim.state import ArmState
from ..world import DEFAULT_CUBE, WorldSpec
from . import CAPABILITIES
from .base import FRANKA_HAND_CONTINUOUS_FORCE, PhysicsRobot, PhysicsWorld

ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))  # DOF names in Isaac's franka.usd, as published
GRIPPER_JOINTS = ("panda_finger_joint1", "panda_finger_joint2")
TORQUE_LIMITS = np.array([87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0])  # [Nm]
HAND_LINK = "panda_hand"
FLANGE_LINK = "panda_link8"
TCP_OFFSET = 0.1034  # [m] Franka Hand: hand frame -> EE frame along the hand's z axis (F_T_EE)
HAND_YAW = -math.pi / 4  # the hand (and EE) frame is the flange frame turned by this about z
FINGER_RANGE = (0.0, 0.04)  # [m] travel of each finger
GRIPPER_FORCE_MAX = 140.0  # [N] Franka Hand peak grasp force
GRAVITY = 9.81  # [m/s^2]
FRANKA_ASSET = "Isaac/Robots/FrankaRobotics/FrankaPanda/franka.usd"  # relative to the asset root
ROBOT_PRIM = "/World/franka"
TABLE_PRIM = "/World/table"
CUBE_PRIM = "/World/cube"
USD_PATH_ENV = "ISAAC_FRANKA_USD"

NOT_INSTALLED = (
    "Isaac Sim 6 is not installed: pip install 'isaacsim[all,extscache]==6.2.0.0' (Python 3.12, see "
    "scripts/gpu_check.sh) on a host with an NVIDIA RTX GPU; use backend:=mujoco on the CPU"
)

_app_started = False  # Kit runs once per process: one IsaacBackend per process


# ---------------------------------------------------------------------------------- pure numpy helpers
def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def quat_wxyz_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix of a (w, x, y, z) quaternion, as Isaac's core API returns them."""
    w, x, y, z = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat_xyzw(rotation: np.ndarray) -> np.ndarray:
    """(x, y, z, w) quaternion of a rotation matrix (w >= 0), as the controller and ROS use them."""
    r = rotation
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [(r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, 0.25 * s]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = [0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s, (r[2, 1] - r[1, 2]) / s]
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = [(r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s, (r[0, 2] - r[2, 0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = [(r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s, (r[1, 0] - r[0, 1]) / s]
    quat = np.array(q)
    quat /= np.linalg.norm(quat)
    return -quat if quat[3] < 0.0 else quat


def quat_multiply_wxyz(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton products a * b of (w, x, y, z) quaternions, row by row (either may be one quaternion)."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    aw, ax, ay, az = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    bw, bx, by, bz = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=1,
    )


def skew(v: np.ndarray) -> np.ndarray:
    """The matrix [v]x with [v]x w = v x w."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def shift_jacobian(jacobian: np.ndarray, from_point: np.ndarray, to_point: np.ndarray) -> np.ndarray:
    """Jacobian (linear rows first) of another point of the same body: v_to = v_from + w x (to - from)."""
    shifted = jacobian.copy()
    shifted[:3] -= skew(np.asarray(to_point) - np.asarray(from_point)) @ jacobian[3:]
    return shifted


def clamp_motor_torque(tau: np.ndarray, gravity: np.ndarray) -> np.ndarray:
    """The controller torque that is applied when the motors' total (controller + gravity) is limited."""
    return np.clip(tau + gravity, -TORQUE_LIMITS, TORQUE_LIMITS) - gravity


# ---------------------------------------------------------------------------------- Isaac Sim start-up
def _start_simulation_app(headless: bool) -> Any:
    """Create Isaac Sim's `SimulationApp` (it must precede every other Isaac/Omniverse import)."""
    global _app_started
    try:
        from isaacsim import SimulationApp
    except ImportError as exc:  # also when only isaacsim-ros2 (the bundled ROS 2) is installed
        raise RuntimeError(NOT_INSTALLED) from exc
    if _app_started:
        raise RuntimeError("Isaac Sim runs once per process: create one IsaacBackend per process")
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_sigint = signal.getsignal(signal.SIGINT) if in_main_thread else None
    try:
        app = SimulationApp({"headless": headless})
    except Exception as exc:  # no GPU / driver / Vulkan: say so, the caller can fall back to MuJoCo
        raise RuntimeError(f"Isaac Sim could not start (it needs an NVIDIA RTX GPU and driver): {exc}") from exc
    _app_started = True
    if previous_sigint is not None:
        # SimulationApp installs a SIGINT handler that exits the process: keep the host's (rclpy's)
        signal.signal(signal.SIGINT, previous_sigint)
    return app


def _franka_usd_path(usd_path: str | None) -> str:
    """The Franka USD: `usd_path`, else $ISAAC_FRANKA_USD, else the one under Isaac Sim's asset root."""
    path = usd_path or os.environ.get(USD_PATH_ENV)
    if path:
        return path
    from isaacsim.storage.native import get_assets_root_path, path_join

    try:
        root = get_assets_root_path()
    except RuntimeError as exc:
        raise RuntimeError(
            f"Isaac Sim's asset root is unreachable ({exc}); download the asset pack and set "
            f"ISAACSIM_ASSET_ROOT, or point {USD_PATH_ENV} at a local {FRANKA_ASSET}"
        ) from exc
    return path_join(root, FRANKA_ASSET)


def _rigid_body_paths(stage: Any, root_path: str) -> dict[str, str]:
    """Prim path of every rigid body under `root_path`, by prim name (the articulation's body names)."""
    from pxr import Usd, UsdPhysics

    paths: dict[str, str] = {}
    for prim in Usd.PrimRange(stage.GetPrimAtPath(root_path)):
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            paths.setdefault(prim.GetName(), prim.GetPath().pathString)
    return paths


class IsaacRobot(PhysicsRobot):
    """The Franka arm + hand in Isaac Sim 6 (PhysX on the CPU, 1 kHz, no rendering in the loop)."""

    def __init__(
        self,
        timestep: float = 0.001,
        headless: bool = True,
        usd_path: str | None = None,
        gripper: str = "Franka",
    ) -> None:
        """Start Isaac Sim, load the scene and set the arm up for torque control.

        Raises RuntimeError when Isaac Sim is not installed or cannot start (no GPU).
        """
        if gripper != "Franka":
            raise ValueError(f"the Isaac Sim backend carries the Franka hand; gripper_type '{gripper}' is MuJoCo only")
        self._app = _start_simulation_app(headless)
        # no app.close() on failure: Kit's fast shutdown would end the process and hide the error
        self._build(timestep, usd_path)

    def _build(self, timestep: float, usd_path: str | None) -> None:
        # Isaac modules exist only once SimulationApp runs
        from isaacsim.core.api import World
        from isaacsim.core.api.materials import PhysicsMaterial
        from isaacsim.core.api.objects import DynamicCuboid, GroundPlane
        from isaacsim.core.prims import Articulation, RigidPrim
        from isaacsim.core.utils.stage import add_reference_to_stage

        self.timestep = float(timestep)
        self.arm_joint_names = ARM_JOINTS
        self.gripper_joint_names = GRIPPER_JOINTS
        self.joint_names = ARM_JOINTS + GRIPPER_JOINTS
        self._rot_flange_ee = rot_z(HAND_YAW)
        self.flange_to_ee = (np.array([0.0, 0.0, TCP_OFFSET]), self._rot_flange_ee)

        # CPU PhysX (numpy backend): per-tick reads of one arm are cheaper there than on the GPU pipeline
        render_every = max(1, round(1.0 / (60.0 * self.timestep)))
        self.world = World(
            physics_dt=self.timestep,
            rendering_dt=self.timestep * render_every,
            stage_units_in_meters=1.0,
            backend="numpy",
            device="cpu",
        )
        table_material = PhysicsMaterial(
            "/World/Physics_Materials/table", static_friction=0.8, dynamic_friction=0.6, restitution=0.0
        )
        GroundPlane(TABLE_PRIM, name="table", z_position=0.0, physics_material=table_material)
        add_reference_to_stage(usd_path=_franka_usd_path(usd_path), prim_path=ROBOT_PRIM)
        cube = DEFAULT_CUBE  # the world's description (capabilities: only this object for now)
        half_yaw = cube.rpy[2] / 2
        self.cube = self.world.scene.add(
            DynamicCuboid(
                CUBE_PRIM,
                name=cube.name,
                position=np.array(cube.position),
                orientation=np.array([math.cos(half_yaw), 0.0, 0.0, math.sin(half_yaw)]),
                size=cube.size[0],
                mass=cube.mass,
                color=np.array(cube.rgba[:3]),
            )
        )
        self.robot = Articulation(ROBOT_PRIM, name="franka")
        # never let the arm fall asleep while it holds still under impedance control (if the asset
        # has no PhysxArticulationAPI to carry the threshold, PhysX's default stays)
        with contextlib.suppress(Exception):
            self.robot.set_sleep_thresholds(np.zeros(1))
        self.world.reset()  # plays the timeline, creates the physics views, initializes the cube
        self.robot.initialize()

        r = self.robot
        dof_names = list(r.dof_names)
        missing = [n for n in self.joint_names if n not in dof_names]
        if missing:
            raise RuntimeError(f"the Franka asset lacks the joints {missing} (it has {dof_names})")
        self._arm = np.array([r.get_dof_index(n) for n in ARM_JOINTS])
        self._fingers = np.array([r.get_dof_index(n) for n in GRIPPER_JOINTS])
        self._all = np.concatenate([self._arm, self._fingers])
        body_names = list(r.body_names)
        if HAND_LINK not in body_names:
            raise RuntimeError(f"the Franka asset has no '{HAND_LINK}' link (it has {body_names})")
        n_blocks, _, n_cols = r.get_jacobian_shape()
        if n_cols != r.num_dof:
            raise RuntimeError("the Franka articulation is not fixed-base (its Jacobian has 6 root columns)")
        # A fixed-base articulation has no Jacobian block for its root link (panda_link0, body 0): block
        # i belongs to body i + 1, so the hand's block is its body index minus one. Its columns are the
        # DOFs in the articulation's order (the arm's are picked by index, normally the first 7), and
        # its linear rows are the world-frame velocity of the link's centre of mass (PhysX's dense
        # Jacobian), hence the shift to the EE point in measure.
        self._hand_body = r.get_body_index(HAND_LINK)
        self._hand_jacobian_block = self._hand_body - 1
        if not 0 <= self._hand_jacobian_block < n_blocks:
            raise RuntimeError(f"'{HAND_LINK}' is body {self._hand_body}, outside the {n_blocks} Jacobian blocks")

        # every link, in the articulation's body order: poses for the EE and TF, forces on the hand
        paths = _rigid_body_paths(self.world.stage, ROBOT_PRIM)
        unknown = [n for n in body_names if n not in paths]
        if unknown:
            raise RuntimeError(f"no rigid-body prims for the links {unknown} under {ROBOT_PRIM}")
        link_paths = [paths[n] for n in body_names]
        self.links = RigidPrim(
            link_paths, name="franka_links", reset_xform_properties=False, prepare_contact_sensors=False
        )
        self.links.initialize()
        if list(self.links.prim_paths) != link_paths:
            raise RuntimeError("the link view does not follow the articulation's body order")
        self._hand_only = np.array([self._hand_body])
        # TF frames: the links, the flange if the asset merged it into the hand, and the cube
        self._derive_flange = FLANGE_LINK not in body_names
        self.frame_names = tuple(body_names) + ((FLANGE_LINK,) if self._derive_flange else ()) + ("cube",)

        # arm: pure torque control (no drive stiffness or damping), efforts limited like the motors
        n_arm = self._arm.size
        r.set_gains(kps=np.zeros((1, n_arm)), kds=np.zeros((1, n_arm)), joint_indices=self._arm)
        r.set_max_efforts(TORQUE_LIMITS[None, :], joint_indices=self._arm)
        # the robot carries its own weight (like MuJoCo's gravcomp): no gravity on any of its links
        r.set_body_disable_gravity(np.ones((1, r.num_bodies)))
        if not np.all(np.asarray(r.get_body_disable_gravity()) != 0):
            raise RuntimeError("Isaac Sim did not disable gravity on the Franka's links")

        base_position, base_quat = r.get_world_poses()
        self._base_position = np.asarray(base_position, dtype=float).reshape(3)
        self._base_quat = np.asarray(base_quat, dtype=float).reshape(4)  # (w, x, y, z)
        self._base_rotation_t = quat_wxyz_to_matrix(self._base_quat).T
        self._gravity_world = np.array([0.0, 0.0, -GRAVITY])
        com_positions, com_quats = r.get_body_coms(body_indices=self._hand_only)
        self._hand_mass = float(np.asarray(r.get_body_masses(body_indices=self._hand_only)).reshape(-1)[0])
        self._hand_com_own = np.asarray(com_positions, dtype=float).reshape(3)  # hand frame, without payload
        self._hand_com_quat = np.asarray(com_quats, dtype=float).reshape(1, 1, 4)
        self._hand_com = self._hand_com_own.copy()  # the point PhysX's hand Jacobian refers to

        self._tau = np.zeros(7)  # controller torque applied in the last step (after the limits)
        self._gravity = np.zeros(r.num_dof)
        self._wrench = np.zeros(6)  # base frame, at the EE point
        self._payload_mass = 0.0
        self._payload_com = np.zeros(3)  # hand frame
        self._ee_world = np.zeros(3)
        self._load_world = np.zeros(3)
        self._link_poses: tuple[np.ndarray, np.ndarray] | None = None  # link poses read in measure
        # (dq, coriolis, payload holding torque) at measure; then with the applied efforts
        self._pre_step: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._last_step: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._finger_target = FINGER_RANGE[1]
        self._state: ArmState | None = None
        self._tau_next = np.zeros(7)
        self.command_gripper(FINGER_RANGE[1], FRANKA_HAND_CONTINUOUS_FORCE)

    # ------------------------------------------------------------------ per tick
    def measure(self) -> ArmState:
        if self._state is None:
            self._state = self._measure()
        return self._state

    def set_torque(self, tau: np.ndarray) -> None:
        self._tau_next = np.asarray(tau, dtype=float)

    def _measure(self) -> ArmState:
        r = self.robot
        q = np.asarray(r.get_joint_positions(), dtype=float)[0]
        dq = np.asarray(r.get_joint_velocities(), dtype=float)[0]
        jacobians = np.asarray(r.get_jacobians(), dtype=float)[0]
        coriolis = np.asarray(r.get_coriolis_and_centrifugal_forces(), dtype=float)[0]
        self._gravity = np.asarray(r.get_generalized_gravity_forces(), dtype=float)[0]
        positions, quats = self.links.get_world_poses()
        self._link_poses = (np.asarray(positions, dtype=float), np.asarray(quats, dtype=float))
        hand_position = self._link_poses[0][self._hand_body]
        hand_rotation = quat_wxyz_to_matrix(self._link_poses[1][self._hand_body])

        ee_world = hand_position + hand_rotation[:, 2] * TCP_OFFSET
        com_world = hand_position + hand_rotation @ self._hand_com
        jacobian_world = shift_jacobian(jacobians[self._hand_jacobian_block][:, self._arm], com_world, ee_world)
        self._ee_world = ee_world
        holding = np.zeros(7)
        if self._payload_mass > 0.0:
            self._load_world = hand_position + hand_rotation @ self._payload_com
            load_jacobian = shift_jacobian(jacobian_world, ee_world, self._load_world)
            holding = -load_jacobian[:3].T @ (self._payload_mass * self._gravity_world)
        self._pre_step = (dq, coriolis, holding)
        rt = self._base_rotation_t
        rotation = rt @ hand_rotation  # the EE frame has the hand frame's orientation
        return ArmState(
            q=q[self._arm],
            dq=dq[self._arm],
            tau_measured=self._tau + self._gravity[self._arm],
            position=rt @ (ee_world - self._base_position),
            rotation=rotation,
            quat=matrix_to_quat_xyzw(rotation),
            jacobian=np.vstack((rt @ jacobian_world[:3], rt @ jacobian_world[3:])),
            coriolis=coriolis[self._arm],
        )

    def _step(self) -> None:
        r = self.robot
        self._state = None
        self._tau = clamp_motor_torque(self._tau_next, self._gravity[self._arm])
        r.set_joint_efforts(self._tau[None, :].astype(np.float32), joint_indices=self._arm)
        # PhysX clears applied forces after every step: the wrench and the payload's weight are
        # applied again before each one, at points measured in measure (world frame; the tensor
        # API adds the moment about the hand's centre of mass)
        if self._wrench.any():
            base_rotation = self._base_rotation_t.T
            self.links.apply_forces_and_torques_at_pos(
                forces=(base_rotation @ self._wrench[:3])[None, :],
                torques=(base_rotation @ self._wrench[3:])[None, :],
                positions=self._ee_world[None, :],
                indices=self._hand_only,
                is_global=True,
            )
        if self._payload_mass > 0.0:
            self.links.apply_forces_and_torques_at_pos(
                forces=(self._payload_mass * self._gravity_world)[None, :],
                positions=self._load_world[None, :],
                indices=self._hand_only,
                is_global=True,
            )
        if self._pre_step is not None:
            efforts = np.zeros(r.num_dof)
            efforts[self._arm] = self._tau
            self._last_step = (*self._pre_step, efforts)
        self.world.step(render=False)

    # ------------------------------------------------------------------ measurements
    def external_torque(self) -> np.ndarray:
        """From the equation of motion over the last step (gravity is off on the links):

        tau_ext = M (dq_after - dq_before) / dt + C(q, dq) dq - tau_applied, for the arm rows.
        Contacts, pushes and the applied wrench show up here (so do joint friction and limits); the
        payload's weight does not, as in the MuJoCo backend: the loop accounts for it.
        """
        if self._last_step is None:
            return np.zeros(7)
        dq_before, coriolis, holding, efforts = self._last_step
        r = self.robot
        dq_after = np.asarray(r.get_joint_velocities(), dtype=float)[0]
        mass = np.asarray(r.get_mass_matrices(), dtype=float)[0]
        tau = mass @ ((dq_after - dq_before) / self.timestep) + coriolis - efforts
        return tau[self._arm] + holding

    def joint_state(self) -> tuple[np.ndarray, np.ndarray]:
        r = self.robot
        q = np.asarray(r.get_joint_positions(), dtype=float)[0]
        dq = np.asarray(r.get_joint_velocities(), dtype=float)[0]
        return q[self._all], dq[self._all]

    def frame_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Poses of `frame_names` in the base frame; the links as measured at the start of the step."""
        if self._link_poses is None:
            positions, quats = self.links.get_world_poses()
            self._link_poses = (np.asarray(positions, dtype=float), np.asarray(quats, dtype=float))
        positions, quats = self._link_poses
        if self._derive_flange:  # franka_description: the hand is the flange turned by HAND_YAW
            back = np.array([math.cos(-HAND_YAW / 2), 0.0, 0.0, math.sin(-HAND_YAW / 2)])
            positions = np.vstack([positions, positions[self._hand_body]])
            quats = np.vstack([quats, quat_multiply_wxyz(quats[self._hand_body], back)])
        cube_position, cube_quat = self.cube.get_world_pose()
        positions = np.vstack([positions, np.asarray(cube_position, dtype=float)])
        quats = np.vstack([quats, np.asarray(cube_quat, dtype=float)])
        base_conjugate = self._base_quat * np.array([1.0, -1.0, -1.0, -1.0])
        positions = (positions - self._base_position) @ self._base_rotation_t.T
        quats = quat_multiply_wxyz(base_conjugate, quats)
        return positions, quats[:, [1, 2, 3, 0]]

    def gripper_positions(self) -> np.ndarray:
        return np.asarray(self.robot.get_joint_positions(), dtype=float)[0][self._fingers]

    # ------------------------------------------------------------------ commands
    def command_gripper(self, position: float, max_effort: float) -> None:
        """Both fingers to `position` [m per finger, 0 closed .. 0.04 open], each pushing at most `max_effort` [N].

        The asset's finger position drives move them; their force limit makes a grasp effort-limited.
        A non-positive `max_effort` means the hand's continuous grasp force (70 N).
        """
        target = float(np.clip(position, *FINGER_RANGE)) if math.isfinite(position) else self._finger_target
        force = float(max_effort) if math.isfinite(max_effort) and max_effort > 0.0 else FRANKA_HAND_CONTINUOUS_FORCE
        force = min(force, GRIPPER_FORCE_MAX)
        self._finger_target = target
        r = self.robot
        r.set_max_efforts(np.full((1, 2), force), joint_indices=self._fingers)
        r.set_joint_position_targets(np.full((1, 2), target), joint_indices=self._fingers)

    def set_external_wrench(self, wrench: np.ndarray) -> None:
        """Force and torque (base frame) applied at the end-effector point, every step until changed."""
        self._wrench = np.array(wrench, dtype=float).reshape(6)

    def set_payload(self, mass: float, center_of_mass: np.ndarray, inertia: np.ndarray) -> None:
        """A load at the flange, as a point mass: its mass and centre of mass join the hand link, and its
        weight acts as a force at that point (the links carry no gravity). `inertia` is not modelled."""
        mass = max(0.0, float(mass))
        com_hand = self._rot_flange_ee.T @ np.asarray(center_of_mass, dtype=float).reshape(3)  # flange -> hand
        total = self._hand_mass + mass
        com = (self._hand_mass * self._hand_com_own + mass * com_hand) / total
        r = self.robot
        r.set_body_masses(np.array([[total]]), body_indices=self._hand_only)
        r.set_body_coms(positions=com[None, None, :], orientations=self._hand_com_quat, body_indices=self._hand_only)
        self._hand_com = com
        self._payload_mass, self._payload_com = mass, com_hand

    def set_arm_configuration(self, q: np.ndarray) -> None:
        r = self.robot
        q = np.asarray(q, dtype=float).reshape(7)
        r.set_joint_positions(q[None, :], joint_indices=self._arm)
        r.set_joint_velocities(np.zeros((1, self._all.size)), joint_indices=self._all)
        # set_joint_positions also moved every drive target to the current position: restore the fingers'
        r.set_joint_position_targets(np.full((1, 2), self._finger_target), joint_indices=self._fingers)
        self._tau = np.zeros(7)
        self._link_poses = None
        self._pre_step = None
        self._last_step = None

    def close(self, exit_code: int = 0) -> None:
        """Shut Isaac Sim down. With Kit's fast shutdown (its default) this ends the process with `exit_code`."""
        app, self._app = getattr(self, "_app", None), None
        if app is not None:
            app.close(exit_code=exit_code)


class IsaacWorld(PhysicsWorld):
    """A world of one robot at the origin (CAPABILITIES['isaac']): the cube is among its frames."""

    capabilities = CAPABILITIES["isaac"]
    frame_names = ()

    def __init__(self, world: WorldSpec, timestep: float = 0.001, headless: bool = True) -> None:
        (robot,) = world.robots
        if any(robot.base_position) or robot.base_yaw:
            raise ValueError("the isaac backend places its robot at the world origin: base_position 0, base_yaw 0")
        self.robot = IsaacRobot(timestep, headless=headless, gripper=robot.gripper_type)
        self.robots = (self.robot,)
        self.timestep = timestep

    def begin_step(self) -> None:
        self.robot._state = None

    def end_step(self) -> None:
        self.robot._step()

    def close(self) -> None:
        self.robot.close()
