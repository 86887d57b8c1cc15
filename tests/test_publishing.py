"""What the simulation publishes, at which rate, and that a topic nobody subscribes to costs nothing
(docs/ros_interfaces.md): a publisher knows from ROS 2's matched events whether a subscription listens, and the
simulation leaves unheard topics unserialized and unpublished; the state comes every 4 ms of simulated time
(250 Hz), all of a tick under one stamp, so that a getstate (the newest tick, test_state_taps) is never more than
4 ms of simulated time behind the robot; the gripper's joints and /clock come every other state tick."""

from __future__ import annotations

import threading

import pytest
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from isaac_franka_bridge.ros import listened
from isaac_franka_bridge.ros.listened import ListenedPublisher

from conftest import wait_until

STATE_PERIOD_NS = 4_000_000  # 250 Hz, config/sim.yaml's state_publish_rate
JOINT_STATES_PERIOD_NS = 8_000_000  # 125 Hz, every other state tick


@pytest.fixture()
def node_pair(probe):
    """Two nodes of the test's ROS context (the probe's rclpy.init), spun: one publishes, one subscribes."""
    publisher_node, subscriber_node = Node("listened_pub"), Node("listened_sub")
    executor = SingleThreadedExecutor()
    for n in (publisher_node, subscriber_node):
        executor.add_node(n)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    yield publisher_node, subscriber_node
    executor.shutdown()
    publisher_node.destroy_node()
    subscriber_node.destroy_node()


def test_a_publisher_knows_from_matched_events_whether_a_subscription_listens(node_pair):
    publisher_node, subscriber_node = node_pair
    topic = "/test_listened"
    publisher = ListenedPublisher(publisher_node, String, topic, QoSProfile(depth=1))
    assert not publisher.listened  # nobody subscribes: the simulation serializes and publishes nothing
    received: list[String] = []
    subscription = subscriber_node.create_subscription(String, topic, received.append, 1)
    assert wait_until(lambda: publisher.listened, 10.0)
    publisher.publish(String(data="heard"))
    assert wait_until(lambda: received, 10.0) and received[0].data == "heard"
    subscriber_node.destroy_subscription(subscription)
    assert wait_until(lambda: not publisher.listened, 10.0)


def test_without_matched_events_every_topic_counts_as_listened(node_pair, monkeypatch):
    """A ROS 2 without the matched event (Humble) publishes everything, as a plain publisher."""
    monkeypatch.setattr(listened, "PublisherEventCallbacks", None)
    publisher = ListenedPublisher(node_pair[0], String, "/test_unknown_listeners", QoSProfile(depth=1))
    assert publisher.subscriptions is None and publisher.listened


def stamps_of(node, kind, topic: str, count: int) -> list[int]:
    """The header stamps [ns] of the next `count` messages of `topic`."""
    stamps: list[int] = []

    def on_message(msg) -> None:
        stamp = msg.clock if kind is Clock else msg.header.stamp
        stamps.append(stamp.sec * 1_000_000_000 + stamp.nanosec)

    qos = QoSProfile(depth=count)
    subscription = node.create_subscription(kind, topic, on_message, qos)
    try:
        assert wait_until(lambda: len(stamps) >= count, 30.0), f"{len(stamps)} messages on {topic}"
    finally:
        node.destroy_subscription(subscription)
    return stamps[:count]


def steps_of(stamps: list[int]) -> set[int]:
    return {b - a for a, b in zip(stamps, stamps[1:], strict=False)}


def test_the_state_comes_every_4_ms_of_simulated_time_all_of_a_tick_under_one_stamp(ros):
    """At 250 Hz a getstate, which answers the newest tick, is at most 4 ms of simulated time behind the robot.
    (Steps of whole periods only, the smallest one period: a message a loaded machine's probe missed is no
    failure.)"""
    for kind, topic in (
        (PoseStamped, "/franka_state_controller/O_T_EE"),
        (TwistStamped, "/franka_state_controller/O_dP_EE"),
        (WrenchStamped, "/franka_state_controller/K_F_ext_hat_K"),
        (JointState, "/franka_state_controller/joint_states"),
    ):
        stamps = stamps_of(ros, kind, topic, 25)
        assert all(s % STATE_PERIOD_NS == 0 for s in stamps), (topic, stamps)  # on the ticks' one grid
        assert min(steps_of(stamps)) == STATE_PERIOD_NS, (topic, sorted(steps_of(stamps)))


def test_the_grippers_joints_and_the_clock_come_every_other_state_tick(ros):
    for kind, topic in ((JointState, "/franka_gripper/joint_states"), (Clock, "/clock")):
        stamps = stamps_of(ros, kind, topic, 20)
        assert all(s % JOINT_STATES_PERIOD_NS == 0 for s in stamps), (topic, stamps)  # a state tick's stamp
        assert min(steps_of(stamps)) == JOINT_STATES_PERIOD_NS, (topic, sorted(steps_of(stamps)))
