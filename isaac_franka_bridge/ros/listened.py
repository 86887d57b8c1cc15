"""Publishers that know whether anyone listens, so that a topic nobody subscribes to costs nothing.

The simulation publishes thousands of messages a second from its physics thread, and each costs
the middleware's work whether or not a subscription receives it. ROS 2 tells a publisher when a
subscription matches or leaves (its `matched` event, handled by the node's executor); the count is
kept from those events, so asking costs no graph query (`get_subscription_count()` is one: 4 µs
measured, where a publish nobody reads costs 6). Where ROS 2 or its middleware has no such event
(Humble), every topic counts as listened and is published, as a plain publisher would be.

Only for topics whose messages are of the moment (volatile): a latched topic is published whatever
the count, so that a late subscriber still gets the last message.
"""

from __future__ import annotations

from rclpy.node import Node
from rclpy.qos import QoSProfile

try:  # ROS 2 Iron and later
    from rclpy.event_handler import PublisherEventCallbacks, UnsupportedEventTypeError
except ImportError:  # Humble: no matched event
    PublisherEventCallbacks = UnsupportedEventTypeError = None


class ListenedPublisher:
    """A publisher and the number of subscriptions matched to it (None: not known, counts as listened)."""

    def __init__(self, node: Node, msg_type, topic: str, qos: QoSProfile) -> None:
        self.subscriptions: int | None = None
        if PublisherEventCallbacks is not None:
            try:
                callbacks = PublisherEventCallbacks(matched=self._on_matched)
                self.publisher = node.create_publisher(msg_type, topic, qos, event_callbacks=callbacks)
                self.subscriptions = 0  # the subscriptions there already are matched by events to come
                return
            except (TypeError, UnsupportedEventTypeError):  # this middleware reports no matches
                pass
        self.publisher = node.create_publisher(msg_type, topic, qos)

    @property
    def listened(self) -> bool:
        """Whether a subscription receives what is published now (True when not known)."""
        return self.subscriptions is None or self.subscriptions > 0

    def publish(self, msg) -> None:
        self.publisher.publish(msg)

    def _on_matched(self, info) -> None:  # (the node's executor thread)
        self.subscriptions = info.current_count
