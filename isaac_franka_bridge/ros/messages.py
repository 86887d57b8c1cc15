"""Conversions between the simulation's numpy data and standard ROS 2 messages."""

from __future__ import annotations

import math

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

JACOBIAN_LAYOUT = MultiArrayLayout(
    dim=[
        MultiArrayDimension(label="column", size=7, stride=42),
        MultiArrayDimension(label="row", size=6, stride=6),
    ],
    data_offset=0,
)


def stamp_of(seconds: float) -> Time:
    sec = math.floor(seconds)
    return Time(sec=int(sec), nanosec=int(round((seconds - sec) * 1e9)) % 1_000_000_000)


def pose_msg(stamp: Time, frame_id: str, position: np.ndarray, quat: np.ndarray) -> PoseStamped:
    msg = PoseStamped()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    o.x, o.y, o.z, o.w = (float(v) for v in quat)
    return msg


def pose_from_msg(msg: PoseStamped) -> tuple[np.ndarray, np.ndarray]:
    p, o = msg.pose.position, msg.pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def twist_msg(stamp: Time, frame_id: str, twist: np.ndarray) -> TwistStamped:
    msg = TwistStamped()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    t = msg.twist
    t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z = (float(v) for v in twist)
    return msg


def wrench_msg(stamp: Time, frame_id: str, wrench: np.ndarray) -> WrenchStamped:
    msg = WrenchStamped()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    w = msg.wrench
    w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z = (float(v) for v in wrench)
    return msg


def wrench_from_msg(msg: WrenchStamped) -> np.ndarray:
    f, t = msg.wrench.force, msg.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z])


def joint_state_msg(
    stamp: Time, names: tuple[str, ...], position: np.ndarray, velocity=None, effort=None
) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.name = list(names)
    msg.position = position.tolist()
    if velocity is not None:
        msg.velocity = velocity.tolist()
    if effort is not None:
        msg.effort = effort.tolist()
    return msg


def jacobian_msg(jacobian: np.ndarray) -> Float64MultiArray:
    """42 values, column-major, as franka's ZeroJacobian: reshape((6, 7), order='F') restores it."""
    return Float64MultiArray(layout=JACOBIAN_LAYOUT, data=jacobian.flatten(order="F").tolist())
