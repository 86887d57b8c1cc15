"""The task's ground truth on ROS 2, from the world node `/franka_sim`.

  /task/success   std_msgs/Bool (latched)                  whether the task has succeeded now
  /task/objects   tf2_msgs/TFMessage                       every object's pose in `world`
  /task/status    diagnostic_msgs/DiagnosticStatus (latched)  name, what the ground truth sees, values
  /task/reset     std_srvs/Trigger                         every object back where the world started it
  /task/place/<p> std_srvs/Trigger                         place <p>'s object put there (world.py's places),
                                                           as a person puts it in a holder

Computed by task.py from what the physics reports between two ticks (object poses, contacts), at
`task_rate`. franka_server_ros2 serves it as GET /task. The stock env never sees it.
"""

from __future__ import annotations

import functools

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import TransformStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from scipy.spatial.transform import Rotation
from std_msgs.msg import Bool
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from .. import task
from ..backends import PhysicsWorld
from ..sim.loop import SimulationLoop
from ..world import PlaceSpec, WorldSpec
from . import messages as msgs

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
WORLD_FRAME = "world"
PLACES_KEY = "places"  # /task/status: the world's places, 'name:object,...' (GET /task lists them)


class TaskPublisher:
    def __init__(self, node: Node, spec: WorldSpec, world: PhysicsWorld, loop: SimulationLoop, rate: float) -> None:
        self.node, self.spec, self.world, self.loop = node, spec, world, loop
        self.success = node.create_publisher(Bool, "/task/success", LATCHED)
        self.objects = node.create_publisher(TFMessage, "/task/objects", QoSProfile(depth=1))
        self.status = node.create_publisher(DiagnosticStatus, "/task/status", LATCHED)
        self.names = [o.name for o in spec.objects]
        self.latest = task.TaskState(False, "not evaluated yet")
        node.create_timer(1.0 / rate, self.evaluate)
        node.create_service(Trigger, "/task/reset", self._on_reset)
        for place in spec.places:
            node.create_service(Trigger, f"/task/place/{place.name}", functools.partial(self._on_place, place))

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """What a person does between episodes on the real set-up: the scene back as it started."""
        try:
            self.loop.call(self.world.reset_objects)
        except (RuntimeError, NotImplementedError, TimeoutError) as exc:
            response.success, response.message = False, str(exc)
            return response
        self.node.get_logger().info(f"task {self.spec.task.name}: objects back where they started")
        response.success, response.message = True, "objects back where they started"
        return response

    def _on_place(self, place: PlaceSpec, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """What a person does who puts the object in its holder; refused while a gripper holds it (a person
        could not take it out of the robot's hand), changing nothing."""
        quat = Rotation.from_euler("xyz", place.rpy).as_quat()

        def put() -> str | None:
            if self.world.capabilities.contacts:
                holders = sorted(t for t in task.touching(place.object, self.world.contacts()) if t.endswith("gripper"))
                if holders:
                    return f"{place.object} is held by {', '.join(holders)}: open the gripper first"
            self.world.place_object(place.object, np.array(place.position), quat)
            return None

        try:
            refusal = self.loop.call(put)
        except (RuntimeError, NotImplementedError, TimeoutError, ValueError) as exc:
            refusal = str(exc)
        if refusal is not None:
            self.node.get_logger().warn(f"place {place.name}: {refusal}")
            response.success, response.message = False, refusal
            return response
        self.node.get_logger().info(f"task {self.spec.task.name}: {place.object} put in {place.name}")
        response.success, response.message = True, f"{place.object} put in {place.name}"
        return response

    def _measure(self):
        """In the simulation thread, between two ticks: (sim time, positions, quats, contacts or None)."""
        contacts = self.world.contacts() if self.world.capabilities.contacts else None
        return (self.loop.sim_time, *self.world.object_poses(), contacts)

    def evaluate(self) -> None:
        if not self.loop.running:
            return
        try:
            sim_time, positions, quats, contacts = self.loop.call(self._measure, timeout=1.0)
        except (RuntimeError, TimeoutError):  # the loop stopped or stalls: the diagnostics say so
            return
        poses = {name: (positions[i], quats[i]) for i, name in enumerate(self.names)}
        if contacts is None:
            state = task.TaskState(
                False, f"not computed: the {self.node.get_parameter('backend').value} backend reports no contacts"
            )
        else:
            state = task.evaluate(self.spec.task.success, poses, contacts)
        self.latest = state
        sec, nanosec = msgs.split_stamp(sim_time)
        transforms = []
        for name, (position, quat) in poses.items():
            t = TransformStamped()
            t.header.stamp.sec, t.header.stamp.nanosec = sec, nanosec
            t.header.frame_id, t.child_frame_id = WORLD_FRAME, name
            tr, r = t.transform.translation, t.transform.rotation
            tr.x, tr.y, tr.z = (float(v) for v in position)
            r.x, r.y, r.z, r.w = (float(v) for v in quat)
            transforms.append(t)
        self.objects.publish(TFMessage(transforms=transforms))
        self.success.publish(Bool(data=state.success))
        self.status.publish(self.diagnostic_status())

    def diagnostic_status(self) -> DiagnosticStatus:
        t, state = self.spec.task, self.latest
        values = {"success": str(state.success).lower(), **state.values}
        if self.spec.places:
            values[PLACES_KEY] = ",".join(f"{p.name}:{p.object}" for p in self.spec.places)
        return DiagnosticStatus(
            level=DiagnosticStatus.OK,
            name=t.name,
            hardware_id=t.description,
            message=state.detail,
            values=[KeyValue(key=k, value=v) for k, v in values.items()],
        )
