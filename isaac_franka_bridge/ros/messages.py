"""Conversions between the simulation's numpy data and standard ROS 2 messages.

The state topics go out at up to 1 kHz from Python, so the publisher side fills messages it
built once (names, frames, layout) and hands sequences over as array.array buffers, which the
generated message setters take without a per-element type check.
"""

from __future__ import annotations

import math
from array import array

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, TransformStamped, TwistStamped, WrenchStamped
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout
from tf2_msgs.msg import TFMessage


def doubles(values: np.ndarray) -> array:
    """A float64[] field value without per-element checks."""
    return array("d", np.ascontiguousarray(values, dtype=np.float64).tobytes())


def stamp_of(seconds: float) -> Time:
    sec = math.floor(seconds)
    return Time(sec=int(sec), nanosec=int(round((seconds - sec) * 1e9)) % 1_000_000_000)


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


class StateMessages:
    """The messages of one robot state, built once and refilled every publishing tick."""

    def __init__(self, base_frame: str, ee_frame: str, arm_joints, gripper_joints, all_joints, frames) -> None:
        self.pose = PoseStamped()
        self.pose.header.frame_id = base_frame
        self.twist = TwistStamped()
        self.twist.header.frame_id = base_frame
        self.wrench = WrenchStamped()
        self.wrench.header.frame_id = ee_frame
        self.joints = JointState(name=list(arm_joints))
        self.gripper = JointState(name=list(gripper_joints))
        self.all_joints = JointState(name=list(all_joints))
        self.jacobian = Float64MultiArray(layout=jacobian_layout())
        self.tf = TFMessage(transforms=[TransformStamped() for _ in frames])
        for transform, name in zip(self.tf.transforms, frames, strict=True):
            transform.header.frame_id, transform.child_frame_id = base_frame, name

    def fill(self, stamp: Time, snap) -> None:
        """Arm state topics from a RobotSnapshot (all with the same stamp)."""
        self.pose.header.stamp = self.twist.header.stamp = self.wrench.header.stamp = stamp
        self.joints.header.stamp = stamp
        p, o = self.pose.pose.position, self.pose.pose.orientation
        p.x, p.y, p.z = snap.position.tolist()
        o.x, o.y, o.z, o.w = snap.quat.tolist()
        t = self.twist.twist
        t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = snap.twist.tolist()
        w = self.wrench.wrench
        w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z = snap.wrench.tolist()
        self.joints.position, self.joints.velocity = doubles(snap.q), doubles(snap.dq)
        self.joints.effort = doubles(snap.tau_measured)
        self.jacobian.data = doubles(snap.jacobian.flatten(order="F"))

    def fill_joint_states(self, stamp: Time, snap) -> None:
        """/joint_states (every joint) and the gripper's joint_states."""
        self.gripper.header.stamp = self.all_joints.header.stamp = stamp
        self.gripper.position = doubles(snap.gripper_positions)
        self.all_joints.position = doubles(snap.joint_positions)
        self.all_joints.velocity = doubles(snap.joint_velocities)
        poses = zip(self.tf.transforms, snap.frame_positions.tolist(), snap.frame_quats.tolist(), strict=True)
        for transform, p, q in poses:
            transform.header.stamp = stamp
            t, r = transform.transform.translation, transform.transform.rotation
            t.x, t.y, t.z = p
            r.x, r.y, r.z, r.w = q


def static_transform(parent: str, child: str, translation: np.ndarray, rotation: np.ndarray) -> TransformStamped:
    """A fixed frame for /tf_static; `rotation` is a 3x3 matrix."""
    msg = TransformStamped()
    msg.header.frame_id, msg.child_frame_id = parent, child
    t, r = msg.transform.translation, msg.transform.rotation
    t.x, t.y, t.z = (float(v) for v in translation)
    r.x, r.y, r.z, r.w = (float(v) for v in Rotation.from_matrix(rotation).as_quat())
    return msg


def image_msg(stamp: Time, frame_id: str, pixels: np.ndarray, encoding: str) -> Image:
    """An 8-bit, 3-channel image; the pixels are copied once (array.array takes the buffer as is)."""
    height, width = pixels.shape[:2]
    msg = Image(height=height, width=width, encoding=encoding, is_bigendian=0, step=width * 3)
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    data = array("B")
    data.frombytes(np.ascontiguousarray(pixels).data)
    msg.data = data
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
