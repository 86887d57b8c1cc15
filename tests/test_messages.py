"""The state topics are published as serialized bytes (ros/cdr.py): they must decode, with rclpy's
own deserializer, to exactly the messages the snapshot describes."""

from __future__ import annotations

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from tf2_msgs.msg import TFMessage

from isaac_franka_bridge.backends.mujoco_backend import MujocoWorld
from isaac_franka_bridge.controller import CartesianImpedanceController
from isaac_franka_bridge.ros.cdr import SerializedTemplate
from isaac_franka_bridge.ros.messages import StateMessages, split_stamp
from isaac_franka_bridge.sim.loop import SimulationLoop
from isaac_franka_bridge.world import one_robot_world


@pytest.fixture(scope="module")
def snapshots():
    """Snapshots of a moving arm, taken by the real simulation loop, each with every joint and frame (taken
    where the ROS nodes take them: in on_snapshot)."""
    world = MujocoWorld(one_robot_world())
    taken = []
    loop = SimulationLoop(world, [CartesianImpedanceController()], lambda t, s: None, publish_rate=10)
    control = loop.robots[0]
    loop.on_snapshot = lambda t, s: taken.extend((snap, control.joints()) for snap in s)

    def start() -> None:
        control.start_controller()
        s = control.body.measure()
        control.controller.set_target(s.position + np.array([0.05, -0.03, 0.02]), s.quat)

    loop.submit(start)
    loop.run_ticks(300)  # a snapshot every 100 ticks
    return world.robots[0], taken


def stamp(msg) -> float:
    return msg.sec + msg.nanosec * 1e-9


@pytest.mark.parametrize(
    "seconds, expected",
    [(0.0, (0, 0)), (7.1000000000000005, (7, 100_000_000)), (7.9999999999, (8, 0)), (12.0000000004, (12, 0))],
)
def test_a_time_splits_into_a_stamp_rounded_to_the_nanosecond(seconds, expected):
    """A fraction that rounds up to a whole second carries into sec (it gave 7.0 s for 7.9999999999 s)."""
    assert split_stamp(seconds) == expected


def test_arm_topics_decode_to_the_snapshot(snapshots):
    backend, taken = snapshots
    messages = StateMessages("fr3_link0", "fr3_EE", backend.arm_joint_names, ("g",), ("a", "b"), ("f",))
    for snap, _ in taken:
        stamp_now = split_stamp(snap.stamp)
        pose = deserialize_message(messages.pose(stamp_now, snap), PoseStamped)
        assert pose.header.frame_id == "fr3_link0" and stamp(pose.header.stamp) == pytest.approx(snap.stamp, abs=1e-9)
        p, o = pose.pose.position, pose.pose.orientation
        assert [p.x, p.y, p.z, o.x, o.y, o.z, o.w] == [*snap.position, *snap.quat]
        twist = deserialize_message(messages.twist(stamp_now, snap), TwistStamped).twist
        assert [twist.linear.x, twist.linear.y, twist.linear.z] == list(snap.twist[:3])
        assert [twist.angular.x, twist.angular.y, twist.angular.z] == list(snap.twist[3:])
        wrench = deserialize_message(messages.wrench(stamp_now, snap), WrenchStamped)
        assert wrench.header.frame_id == "fr3_EE"
        assert [wrench.wrench.force.x, wrench.wrench.torque.z] == [snap.wrench[0], snap.wrench[5]]
        joints = deserialize_message(messages.joints(stamp_now, snap), JointState)
        assert list(joints.name) == list(backend.arm_joint_names)
        assert list(joints.position) == list(snap.q) and list(joints.velocity) == list(snap.dq)
        assert list(joints.effort) == list(snap.tau_measured)
        jacobian = deserialize_message(messages.jacobian(stamp_now, snap), Float64MultiArray)
        assert np.array_equal(np.reshape(jacobian.data, (6, 7), order="F"), snap.jacobian)
        assert [d.size for d in jacobian.layout.dim] == [7, 6]
        assert stamp(deserialize_message(messages.clock(stamp_now), Clock).clock) == pytest.approx(snap.stamp, abs=1e-9)


def test_joint_states_and_tf_decode_to_the_snapshot(snapshots):
    backend, taken = snapshots
    b = backend
    messages = StateMessages(
        "fr3_link0", "fr3_EE", b.arm_joint_names, b.gripper_joint_names, b.joint_names, b.frame_names
    )
    snap, joints = taken[-1]
    stamp_now = split_stamp(snap.stamp)
    gripper = deserialize_message(messages.gripper(stamp_now, snap), JointState)
    assert list(gripper.name) == list(b.gripper_joint_names)
    assert list(gripper.position) == list(snap.gripper_positions)
    everything = deserialize_message(messages.all_joints(stamp_now, joints), JointState)
    assert list(everything.position) == list(joints.joint_positions)
    assert list(everything.velocity) == list(joints.joint_velocities)
    tf = deserialize_message(messages.tf(stamp_now, joints), TFMessage)
    assert [t.child_frame_id for t in tf.transforms] == list(b.frame_names)
    for transform, position, quat in zip(tf.transforms, joints.frame_positions, joints.frame_quats, strict=True):
        t, r = transform.transform.translation, transform.transform.rotation
        assert [t.x, t.y, t.z, r.x, r.y, r.z, r.w] == [*position, *quat]
        assert transform.header.frame_id == "fr3_link0"
        assert stamp(transform.header.stamp) == pytest.approx(snap.stamp, abs=1e-9)


def test_a_template_refuses_a_fill_that_does_not_place_every_value():
    def fill_only_x(msg, values, stamp):
        msg.header.stamp = stamp
        msg.pose.position.x = values[0]

    with pytest.raises(ValueError, match="value 1"):
        SerializedTemplate(PoseStamped(), 2, fill_only_x)


def test_camera_frames_decode_to_the_pixels_written_in_place():
    from sensor_msgs.msg import Image

    from isaac_franka_bridge.ros.cdr import SerializedImage

    for frame_id in ("", "a", "wrist_1_optical_frame"):  # every string padding
        image = SerializedImage(frame_id, 5, 7, "bgr8")
        pixels = np.random.default_rng(len(frame_id)).integers(0, 255, (7, 5, 3), dtype=np.uint8)
        image.pixels[:] = pixels
        msg = deserialize_message(image.serialize(12, 250_000_000), Image)
        assert (msg.header.frame_id, stamp(msg.header.stamp)) == (frame_id, 12.25)
        assert (msg.height, msg.width, msg.encoding, msg.step, msg.is_bigendian) == (7, 5, "bgr8", 15, 0)
        np.testing.assert_array_equal(np.frombuffer(bytes(msg.data), np.uint8).reshape(7, 5, 3), pixels)
