"""Conversions between the simulation's numpy data and standard ROS 2 messages.

The state topics go out at hundreds of Hz from Python, so they are serialized from templates
(cdr.py) that are filled here through the messages' normal API, once.
"""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, TransformStamped, TwistStamped, WrenchStamped
from rosgraph_msgs.msg import Clock
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import CameraInfo, JointState
from std_msgs.msg import Float64MultiArray, Header, MultiArrayDimension, MultiArrayLayout
from tf2_msgs.msg import TFMessage

from .cdr import SerializedTemplate


def split_stamp(seconds: float) -> tuple[int, int]:
    """(sec, nanosec) of a time in seconds, rounded to the nanosecond (7.9999999999 is 8 s, not 7)."""
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
    return int(sec), int(nanosec)


def stamp_of(seconds: float) -> Time:
    sec, nanosec = split_stamp(seconds)
    return Time(sec=sec, nanosec=nanosec)


def jacobian_layout() -> MultiArrayLayout:
    """42 values, column-major, as franka's ZeroJacobian: reshape((6, 7), order='F') restores it."""
    return MultiArrayLayout(
        dim=[
            MultiArrayDimension(label="column", size=7, stride=42),
            MultiArrayDimension(label="row", size=6, stride=6),
        ],
        data_offset=0,
    )


def pose_from_msg(msg: PoseStamped) -> tuple[np.ndarray, np.ndarray]:
    p, o = msg.pose.position, msg.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def wrench_from_msg(msg: WrenchStamped) -> np.ndarray:
    f, t = msg.wrench.force, msg.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z])


def _header(msg, stamp: Time):
    msg.header.stamp = stamp
    return msg


def _fill_pose(msg: PoseStamped, v: list[float], stamp: Time) -> None:
    p, o = _header(msg, stamp).pose.position, msg.pose.orientation
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = v


def _fill_twist(msg: TwistStamped, v: list[float], stamp: Time) -> None:
    t = _header(msg, stamp).twist
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = v


def _fill_wrench(msg: WrenchStamped, v: list[float], stamp: Time) -> None:
    w = _header(msg, stamp).wrench
    w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z = v


def _joint_state_filler(fields: tuple[str, ...]):
    def fill(msg: JointState, v: list[float], stamp: Time) -> None:
        n = len(_header(msg, stamp).name)
        for k, field in enumerate(fields):
            setattr(msg, field, v[k * n : (k + 1) * n])

    return fill


def _fill_data(msg: Float64MultiArray, v: list[float], stamp: Time) -> None:
    msg.data = v


def _fill_clock(msg: Clock, v: list[float], stamp: Time) -> None:
    msg.clock = stamp


def _fill_tf(msg: TFMessage, v: list[float], stamp: Time) -> None:
    for k, transform in enumerate(msg.transforms):
        transform.header.stamp = stamp
        t, r = transform.transform.translation, transform.transform.rotation
        t.x, t.y, t.z, r.x, r.y, r.z, r.w = v[7 * k : 7 * k + 7]


def tf_template(parent: str, frames) -> SerializedTemplate:
    """/tf of `frames` in `parent`, filled with (x, y, z, qx, qy, qz, qw) per frame."""
    tf = TFMessage(transforms=[TransformStamped() for _ in frames])
    for transform, name in zip(tf.transforms, frames, strict=True):
        transform.header.frame_id, transform.child_frame_id = parent, name
    return SerializedTemplate(tf, 7 * len(frames), _fill_tf)


class StateMessages:
    """The state topics of the robot, serialized from templates (see cdr.py): one method per topic, so
    that a topic nobody listens to is not serialized. `stamp` is (sec, nanosec) of split_stamp."""

    def __init__(self, base_frame: str, ee_frame: str, arm_joints, gripper_joints, all_joints, frames) -> None:
        n = len(arm_joints)
        base, ee = Header(frame_id=base_frame), Header(frame_id=ee_frame)
        both = _joint_state_filler(("position", "velocity"))
        self._pose = SerializedTemplate(PoseStamped(header=base), 7, _fill_pose)
        self._twist = SerializedTemplate(TwistStamped(header=base), 6, _fill_twist)
        self._wrench = SerializedTemplate(WrenchStamped(header=ee), 6, _fill_wrench)
        self._joints = SerializedTemplate(
            JointState(name=list(arm_joints)), 3 * n, _joint_state_filler(("position", "velocity", "effort"))
        )
        self._jacobian = SerializedTemplate(Float64MultiArray(layout=jacobian_layout()), 6 * n, _fill_data)
        self._clock = SerializedTemplate(Clock(), 0, _fill_clock)
        self._gripper = None  # an arm without a gripper has no franka_gripper topics
        if gripper_joints:
            gripper = JointState(name=list(gripper_joints))
            self._gripper = SerializedTemplate(gripper, len(gripper_joints), _joint_state_filler(("position",)))
        self._all_joints = SerializedTemplate(JointState(name=list(all_joints)), 2 * len(all_joints), both)
        self._tf = tf_template(base_frame, frames)

    # the arm's state topics, every state tick (a RobotSnapshot)
    def pose(self, stamp: tuple[int, int], snap) -> bytes:
        """O_T_EE"""
        return self._pose.serialize(*stamp, np.concatenate((snap.position, snap.quat)))

    def twist(self, stamp: tuple[int, int], snap) -> bytes:
        """O_dP_EE"""
        return self._twist.serialize(*stamp, snap.twist)

    def wrench(self, stamp: tuple[int, int], snap) -> bytes:
        """K_F_ext_hat_K"""
        return self._wrench.serialize(*stamp, snap.wrench)

    def joints(self, stamp: tuple[int, int], snap) -> bytes:
        """franka_state_controller/joint_states: the arm's q, dq and measured torque"""
        return self._joints.serialize(*stamp, np.concatenate((snap.q, snap.dq, snap.tau_measured)))

    def jacobian(self, stamp: tuple[int, int], snap) -> bytes:
        """franka_jacobian, column-major"""
        return self._jacobian.serialize(*stamp, snap.jacobian.ravel(order="F"))

    # at the joint-state rate: the gripper's joints (a RobotSnapshot), every joint and TF (a JointSnapshot)
    def gripper(self, stamp: tuple[int, int], snap) -> bytes | None:
        """franka_gripper/joint_states (None: no gripper)"""
        return self._gripper.serialize(*stamp, snap.gripper_positions) if self._gripper else None

    def all_joints(self, stamp: tuple[int, int], joints) -> bytes:
        """/joint_states: every joint of the robot"""
        return self._all_joints.serialize(*stamp, np.concatenate((joints.joint_positions, joints.joint_velocities)))

    def tf(self, stamp: tuple[int, int], joints) -> bytes:
        """/tf of the robot's frames in its base frame"""
        return self._tf.serialize(*stamp, np.hstack((joints.frame_positions, joints.frame_quats)).ravel())

    def clock(self, stamp: tuple[int, int]) -> bytes:
        return self._clock.serialize(*stamp)


def static_transform(parent: str, child: str, translation: np.ndarray, rotation: np.ndarray) -> TransformStamped:
    """A fixed frame for /tf_static; `rotation` is a 3x3 matrix."""
    msg = TransformStamped()
    msg.header.frame_id, msg.child_frame_id = parent, child
    t, r = msg.transform.translation, msg.transform.rotation
    t.x, t.y, t.z = (float(v) for v in translation)
    r.x, r.y, r.z, r.w = (float(v) for v in Rotation.from_matrix(rotation).as_quat())
    return msg


def camera_info_msg(camera, frame_id: str) -> CameraInfo:
    """Pinhole intrinsics of a CameraSpec (no distortion: the simulated lens is ideal)."""
    focal, cx, cy = camera.intrinsics()
    msg = CameraInfo(height=camera.height, width=camera.width, distortion_model="plumb_bob")
    msg.header.frame_id = frame_id
    msg.d = [0.0] * 5
    msg.k = [focal, 0.0, cx, 0.0, focal, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [focal, 0.0, cx, 0.0, 0.0, focal, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg
