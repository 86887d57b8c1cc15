"""The server's state path over real ROS 2: franka_server_ros2's FrankaRosClient takes the contract's state
topics on demand (no callback per message) and answers the newest tick that every stamped topic has.

A publisher in this test stands in for the robot's state topics so that each tick can be published
whole or in part (a simulator or franka_ros2 publishes them a few microseconds apart); the full path
from the simulator is tested by test_robot_behaviour, test_world and the stock-client tests."""

from __future__ import annotations

import concurrent.futures
import os
import time

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from franka_server_ros2.image_cdr import header_stamp
from franka_server_ros2.robot import RobotUnavailable
from franka_server_ros2.robot_client import TAP_KEEP, FrankaRosClient

from conftest import wait_until

NAMESPACE = f"/state_taps_{os.getpid()}"  # apart from any simulation of the session's domain
KINDS = {
    "joint_states": JointState,
    "O_T_EE": PoseStamped,
    "O_dP_EE": TwistStamped,
    "K_F_ext_hat_K": WrenchStamped,
}


class StatePublisher:
    """The robot's state topics; tick n carries stamp n ms (a 1 kHz robot's) and puts n in its pose's x."""

    def __init__(self, node) -> None:
        self.node = node
        self.publishers = {
            t: node.create_publisher(k, f"{NAMESPACE}/franka_state_controller/{t}", 10) for t, k in KINDS.items()
        }
        self.jacobian = node.create_publisher(
            Float64MultiArray, f"{NAMESPACE}/cartesian_impedance_controller/franka_jacobian", 10
        )

    def tick(self, n: int, topics=tuple(KINDS)) -> None:
        for topic in topics:
            msg = KINDS[topic]()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(n * 1_000_000, 1_000_000_000)
            if topic == "joint_states":
                msg.position, msg.velocity = [0.0] * 7, [0.0] * 7
            if topic == "O_T_EE":
                msg.pose.position.x, msg.pose.orientation.w = float(n), 1.0
            self.publishers[topic].publish(msg)
        self.jacobian.publish(Float64MultiArray(data=[float(n)] * 42))

    def destroy(self) -> None:
        for publisher in (*self.publishers.values(), self.jacobian):
            self.node.destroy_publisher(publisher)


@pytest.fixture()
def server(probe):
    client = FrankaRosClient(namespace=NAMESPACE, parameter_overrides=[Parameter("gripper_type", value="None")])
    publisher = StatePublisher(probe)
    assert wait_until(lambda: all(p.get_subscription_count() > 0 for p in publisher.publishers.values()), 10.0)
    yield client, publisher
    publisher.destroy()
    client.destroy_node()


def newest_tick(client) -> int | None:
    try:
        return round(client.state().stamp * 1e3)
    except RobotUnavailable:
        return None


def test_before_any_state_the_server_says_there_is_none(server):
    client, _ = server
    with pytest.raises(RobotUnavailable, match="no robot state received yet"):
        client.state()
    assert client.state_age is None


def test_the_newest_tick_every_topic_has_and_not_one_half_published(server):
    client, publisher = server
    for n in (1, 2, 3):
        publisher.tick(n)
    assert wait_until(lambda: newest_tick(client) == 3, 5.0)
    np.testing.assert_allclose(client.state().pose, [3.0, 0, 0, 0, 0, 0, 1])
    publisher.tick(4, topics=("joint_states", "O_T_EE"))  # tick 4 half published
    time.sleep(0.3)  # (delivered on loopback within milliseconds)
    assert newest_tick(client) == 3, "a half-published tick mixed into the state"
    publisher.tick(4, topics=("O_dP_EE", "K_F_ext_hat_K"))  # now whole
    assert wait_until(lambda: newest_tick(client) == 4, 5.0)
    np.testing.assert_allclose(client.state().pose[0], 4.0)
    assert 0.0 <= client.state_age < 1.0


def test_many_ticks_between_requests_answer_the_newest(server):
    """A request takes only the newest messages DDS kept; hundreds of ticks since the last one are no work."""
    client, publisher = server
    publisher.tick(1)
    assert wait_until(lambda: newest_tick(client) == 1, 5.0)
    for n in range(2, 300):
        publisher.tick(n)
    assert wait_until(lambda: newest_tick(client) == 299, 5.0)


def test_a_tick_kept_from_an_earlier_request_never_answers_a_later_one(server):
    """Between two requests the topics go on without a common tick (one topic runs ahead): the second request
    must not fall back on the tick the first one took, which would be an old state with a fresh age. The ticks are
    fresh when the request comes and stale by the end of its wait: its 503 names the missing common stamp, not the
    quiet since (on a loaded CI machine the message once depended on a race at the end of the wait)."""
    client, publisher = server
    Node.set_parameters(client, [Parameter("state_wait", value=1.5)])  # past the state_timeout of 0.75 s
    publisher.tick(3)
    assert wait_until(lambda: newest_tick(client) == 3, 5.0)
    publisher.tick(100, topics=("joint_states",))
    publisher.tick(101, topics=("O_T_EE", "O_dP_EE", "K_F_ext_hat_K"))
    time.sleep(0.3)
    with pytest.raises(RobotUnavailable, match="no common stamp"):
        client.state()
    publisher.tick(101, topics=("joint_states",))
    assert wait_until(lambda: newest_tick(client) == 101, 5.0)


def test_topics_without_a_common_stamp_are_unavailable_not_mixed(server):
    client, publisher = server
    for n in range(1, TAP_KEEP + 3):  # joint_states from one clock, the rest from another
        publisher.tick(n, topics=("joint_states",))
        publisher.tick(1000 + n, topics=("O_T_EE", "O_dP_EE", "K_F_ext_hat_K"))
    time.sleep(0.3)
    with pytest.raises(RobotUnavailable, match="no common stamp"):
        client.state()


def gone_quiet(server, state_wait: float, state_timeout: float = 0.3):
    """The robot published tick 7 and then nothing for 0.2 s past the client's state_timeout."""
    client, publisher = server
    # (the node's own set_parameters is a client's)
    Node.set_parameters(
        client, [Parameter("state_timeout", value=state_timeout), Parameter("state_wait", value=state_wait)]
    )
    publisher.tick(7)
    assert wait_until(lambda: newest_tick(client) == 7, 5.0)
    time.sleep(state_timeout + 0.2)
    return client, publisher


def test_state_older_than_the_timeout_is_stale_once_none_came_within_state_wait(server):
    client, _ = gone_quiet(server, state_wait=0.4)
    asked = time.monotonic()
    with pytest.raises(RobotUnavailable, match="stale"):
        client.state()
    assert time.monotonic() - asked >= 0.4  # it waited for a state that never came
    assert client.state_age >= 0.9


def test_a_request_finding_the_state_stale_answers_the_next_state_if_it_comes_within_state_wait(server):
    """A simulator starved of CPU for a moment: HIL-SERL's client cannot retry a 503 (it reads "pose" from it)."""
    client, publisher = gone_quiet(server, state_wait=5.0, state_timeout=1.0)
    answer = concurrent.futures.ThreadPoolExecutor(1).submit(client.state)
    time.sleep(0.3)
    assert not answer.done()  # waiting, not answering the stale tick 7
    publisher.tick(8, topics=("joint_states",))  # the first tick after the quiet, half published (the clock was
    time.sleep(0.3)  # stopped: tick 7 is within a tick of it, but it arrived before the quiet; CI once had 7 back)
    assert not answer.done()  # (the rest of tick 8 comes well within state_timeout of its joint_states)
    publisher.tick(8, topics=("O_T_EE", "O_dP_EE", "K_F_ext_hat_K"))
    assert round(answer.result(timeout=5.0).stamp * 1e3) == 8


def test_a_request_finding_no_whole_tick_answers_the_next_whole_one_if_it_comes_within_state_wait(server):
    """A simulator catching up on a loaded machine publishes its ticks in bursts, and joint_states can be ahead of
    the other topics at the moment of a request. Two worlds' actors once died on the 503 "no common stamp" that a
    request gave at once (HIL-SERL's client cannot retry it)."""
    client, publisher = server
    Node.set_parameters(client, [Parameter("state_wait", value=5.0)])
    publisher.tick(3)
    assert wait_until(lambda: newest_tick(client) == 3, 5.0)
    for n in range(20, 24):  # joint_states 17 ms ahead of every other topic
        publisher.tick(n, topics=("joint_states",))
    time.sleep(0.3)
    answer = concurrent.futures.ThreadPoolExecutor(1).submit(client.state)
    time.sleep(0.3)
    assert not answer.done()  # waiting, neither mixing ticks nor answering tick 3
    publisher.tick(23, topics=("O_T_EE", "O_dP_EE", "K_F_ext_hat_K"))  # the burst's end: tick 23 whole
    assert round(answer.result(timeout=5.0).stamp * 1e3) == 23


def test_the_stamp_is_read_from_the_serialized_message_as_deserializing_reads_it():
    for kind in KINDS.values():
        msg = kind()
        msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id = 1795477329, 999999999, "panda_link0"
        data = serialize_message(msg)
        back = deserialize_message(data, kind).header.stamp
        assert header_stamp(data) == (back.sec, back.nanosec) == (1795477329, 999999999)
