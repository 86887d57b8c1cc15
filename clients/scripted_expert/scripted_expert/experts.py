"""One scripted expert per task: from the simulator's ground truth (GET /task: every object's pose in the
robot's base frame) and the robot's state (POST /getstate), the SpaceMouse input a person would give
(POST /spacemouse), tick by tick, until the ground truth says success.

Each tick decides afresh from what it sees (the object in the hand or not, above the slot or in it, ...),
so an expert starts from any reset state and recovers when something slips. It only moves the SpaceMouse:
what the arm does is HIL-SERL's env's doing (motion.py), inside the experiment's ABS_POSE_LIMIT.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from .client import Server, ServerError
from .motion import Pose, axes_for, closest, rotation_error, step_toward

GRIPPER_OPEN_ABOVE = 0.85  # FrankaEnv closes only a gripper that reads above this, opens one below it
SERVER_PATIENCE_S = 5.0  # [s] a server answering errors this long ends the episode (shorter: tried again)


class ExpertBlocked(RuntimeError):
    """The expert cannot go on with a SpaceMouse alone; the message says why and what to do."""


@dataclass(frozen=True)
class ArmConfig:
    """What the expert must know of an experiment's config.py for one arm (facts of HIL-SERL's configs)."""

    url: str
    action_scale: tuple[float, float]  # ACTION_SCALE[0] (m per unit), ACTION_SCALE[1] (rad per unit)
    low: tuple[float, float, float]  # ABS_POSE_LIMIT_LOW[:3], base frame
    high: tuple[float, float, float]  # ABS_POSE_LIMIT_HIGH[:3]
    gripper: str = "Robotiq"  # Robotiq | Franka | fixed (GripperCloseEnv: the buttons do nothing)

    @property
    def limits(self) -> str:
        """The env's position limits, as the expert's log lines give them."""
        return f"limits {np.round(self.low, 4).tolist()} to {np.round(self.high, 4).tolist()}"


@dataclass(frozen=True)
class Grasp:
    """How an expert takes an object from above (`Expert.take`): its thresholds, tuned per object."""

    above: float  # [m] come down from this high over the grasp
    lateral: float  # [m] close once this near the grasp sideways,
    height: tuple[float, float]  # [m] the hand this far above it (low, high),
    turned: float = np.inf  # [rad] and turned this little
    over_lateral: float = 0.0  # [m] further sideways than this (or over_turned): back over the grasp first
    over_turned: float = np.inf  # [rad]
    press: float = 0.0  # [m] aim this far below the grasp coming down and closing
    close_ticks: int = 30  # closing this many ticks without a grip: come down again
    # opening a gripper found closed, rising clear of the object first: open anyway after this many ticks of it
    # (the object came up with the hand, held off its grasp point; seen after a policy's grasp of the USB stick);
    # None: only once clear. Counted in the phase `take` names (its `what`)
    open_ticks: int | None = None
    max_translation: float = 1.0  # of an action's range (see motion.step_toward)


@dataclass
class Arm:
    """One robot: its server, its state this tick, and the SpaceMouse input last sent for it."""

    config: ArmConfig
    server: Server = field(init=False)
    hand: Pose = field(init=False)
    gripper: float = 0.0
    sent: tuple = ((0.0,) * 6, (0, 0))
    _open_reads: float | None = None

    def __post_init__(self) -> None:
        self.server = Server(self.config.url)

    def read(self) -> None:
        state = self.server.state()
        self.hand, self.gripper = Pose.of(state["pose"]), float(state["gripper_pos"])

    @property
    def gripper_open(self) -> bool:
        return self.gripper > GRIPPER_OPEN_ABOVE

    def holds(self, touching: set[str], part: str = "gripper") -> bool:
        """The object held: the ground truth has it touching this arm's `part`, and the gripper is closed (open
        fingers touch what they come down beside or on)."""
        return part in touching and not self.gripper_open

    def clamp(self, goal: Pose) -> Pose:
        """The goal inside the env's position limits (it would clip the command there anyway)."""
        return Pose(np.clip(goal.pos, self.config.low, self.config.high), goal.rot)

    def aiming(self, grasp: Pose) -> str:
        """The hand against a grasp it goes for, and the grasp against the env's limits (what a grasp that never
        comes needs to be understood)."""
        lateral, height, turned = against(self.hand, grasp)
        beyond = "" if np.allclose(self.clamp(grasp).pos, grasp.pos) else ", beyond them"
        return (
            f"the hand {lateral * 1000:.1f} mm aside of the grasp, {height * 1000:+.1f} mm above it, turned "
            f"{np.degrees(turned):.1f} deg from it; the grasp at {np.round(grasp.pos, 4).tolist()} "
            f"({self.config.limits}{beyond})"
        )

    def command(self, action=None, gripper: str | None = None) -> None:
        """Deflect the cap for `action` (6, base frame) and press `gripper`: 'close' (left), 'open' (right)."""
        if self.config.gripper == "fixed":
            gripper = None
        axes = axes_for(np.zeros(6) if action is None else action)
        buttons = (int(gripper == "close"), int(gripper == "open"))
        self.server.spacemouse(axes, buttons)
        self.sent = (tuple(axes), buttons)

    def rest(self) -> None:
        self.command(None, None)

    def open_reads(self) -> float:
        """What the gripper reads once the server's /open_gripper has opened it: a Robotiq's open position
        comes from /health (0 fully open by default, 175 the published server's: 0.31); 1.0 otherwise."""
        if self._open_reads is None:
            position = self.server.health().get("robotiq_open_position") if self.config.gripper == "Robotiq" else None
            self._open_reads = 1.0 - float(position or 0) / 255.0
        return self._open_reads

    def open_fully(self) -> None:
        """`/move_gripper 0`: a Robotiq wide open (not a SpaceMouse action: see Expert.reopen_robotiq)."""
        self.server.ok("move_gripper", {"gripper_pos": 0})


class Expert:
    """Drives its arms until the ground truth says success. Subclasses implement `tick(truth)`."""

    name = ""
    arm_configs: tuple[ArmConfig, ...] = ()

    def __init__(self, urls: list[str] | None = None, reopen_robotiq: bool = False, log: Callable = print) -> None:
        configs = list(self.arm_configs)
        if urls:
            if len(urls) != len(configs):
                raise ValueError(f"{self.name} drives {len(configs)} arm(s); {len(urls)} URL(s) given")
            configs = [
                ArmConfig(u, c.action_scale, c.low, c.high, c.gripper) for u, c in zip(urls, configs, strict=True)
            ]
        self.arms = [Arm(c) for c in configs]
        self.reopen_robotiq = reopen_robotiq
        self.log = log
        self.phase = ""
        self.phase_since = time.monotonic()
        self.ticks = 0
        self.phase_began = 0  # the tick the phase began at
        self.stopped = threading.Event()  # set() from another thread ends run()

    # ------------------------------------------------------------------ what subclasses use
    def set_phase(self, phase: str) -> None:
        """Log a new phase, with how long the one before it took (where the expert's time goes)."""
        if phase != self.phase:
            now = time.monotonic()
            took = f" ({self.phase} took {now - self.phase_since:.1f} s)" if self.phase else ""
            self.log(f"[{self.name}] {phase}{took}")
            self.phase, self.phase_since, self.phase_began = phase, now, self.ticks

    @property
    def in_phase(self) -> int:
        """Ticks since the phase began."""
        return self.ticks - self.phase_began

    def ensure_open(self, arm: Arm) -> str | None:
        """What to press so that `arm`'s gripper is open for a grasp (None once it is).

        By default a Robotiq's /open_gripper opens it fully: the right button does. With the published
        server's open position 175 (`robotiq_open_position`) an opened Robotiq reads 0.31, below the env's
        0.85: the env takes it for closed, so it never closes it again, and the right button only sends it
        back to 175. A person with a SpaceMouse is stuck there; with `reopen_robotiq` the expert opens it
        fully with /move_gripper 0 (the one step no SpaceMouse can take), else it stops and says so."""
        if arm.gripper_open:
            return None
        if arm.config.gripper == "Robotiq" and arm.open_reads() <= GRIPPER_OPEN_ABOVE:
            if not self.reopen_robotiq:
                raise ExpertBlocked(
                    f"{arm.config.url}: the Robotiq reads {arm.gripper:.2f} and its server's open reads "
                    f"{arm.open_reads():.2f} (robotiq_open_position, the published server's 175): HIL-SERL's env "
                    f"closes a gripper only above {GRIPPER_OPEN_ABOVE}, so no SpaceMouse button can grasp with "
                    "it; run with --reopen-robotiq to open it fully first, or the simulator with its default "
                    "robotiq_open_position 0"
                )
            arm.open_fully()
            self.log(f"[{self.name}] /move_gripper 0 on {arm.config.url} (reads {arm.gripper:.2f})")
            time.sleep(0.8)
            return None
        return "open"

    def take(
        self, arm: Arm, grasp: Pose, how: Grasp, closing: int, what: str = ""
    ) -> tuple[np.ndarray, str | None, int]:
        """One tick of taking an object from above: over it, the gripper opened up there, down, close.
        `closing`: the ticks spent closing so far. Returns the action, the button and the new count (0 when
        not closing, or when it gave up after `how.close_ticks` and comes down again). With `what` ("the
        cube") it names its phases."""
        lateral, height, turned = against(arm.hand, grasp)
        low = grasp.moved([0.0, 0.0, -how.press])
        scale = arm.config.action_scale
        phase = self.set_phase if what else (lambda _: None)
        if closing or (lateral < how.lateral and turned < how.turned and how.height[0] < height < how.height[1]):
            phase("close")
            return (
                step_toward(arm.hand, arm.clamp(low), scale, gain=0.5),
                "close",
                (closing + 1 if closing < how.close_ticks else 0),
            )
        button = None
        if not arm.gripper_open:  # open it up there, clear of the object
            phase("open the gripper")
            goal = Pose(np.array([*arm.hand.pos[:2], grasp.pos[2] + how.above]), grasp.rot)
            if height > how.above / 2 or (what and how.open_ticks is not None and self.in_phase > how.open_ticks):
                button = self.ensure_open(arm)
        elif lateral > how.over_lateral or turned > how.over_turned:
            phase(f"over {what}")
            goal = Pose(np.array([*grasp.pos[:2], max(grasp.pos[2] + how.above, arm.hand.pos[2])]), grasp.rot)
        else:
            phase(f"down to {what}")
            goal = low
        return step_toward(arm.hand, arm.clamp(goal), scale, gain=0.6, max_translation=how.max_translation), button, 0

    # ------------------------------------------------------------------ the loop
    def truth(self) -> dict:
        return self.arms[0].server.task()

    def tick(self, truth: dict) -> None:
        raise NotImplementedError

    def finished(self, truth: dict) -> bool:
        """Whether the episode's work is done: the ground truth's success (some experts go a little deeper)."""
        return bool(truth["success"])

    def rest(self) -> None:
        for arm in self.arms:
            arm.rest()

    def after_success(self) -> None:
        """Between episodes (the command line's loop): what the next reset of the experiment needs."""

    def standing(self) -> str:
        """Where its work stood (an episode that ended without success says so): its phase; subclasses add
        what the phase waits for."""
        return self.phase or "not begun"

    def run(self, timeout: float = 120.0, rate: float = 10.0, until: Callable[[dict], bool] | None = None) -> bool:
        """Ticks at `rate` until `finished` (or `until(truth)`); then the cap at rest. False after `timeout` s."""
        deadline = time.monotonic() + timeout
        done = until or self.finished
        failing_since = None  # a server that answers errors (a state gone stale on a loaded machine) for a while
        try:
            while time.monotonic() < deadline and not self.stopped.is_set():
                start = time.monotonic()
                try:
                    truth = self.truth()
                    if done(truth):
                        self.set_phase(f"done: {truth['detail']}")
                        return True
                    for arm in self.arms:
                        arm.read()
                    self.tick(truth)
                    failing_since = None
                except ServerError as exc:
                    failing_since = failing_since or start
                    if start - failing_since > SERVER_PATIENCE_S:
                        raise
                    self.log(f"[{self.name}] {exc}: trying again")
                self.ticks += 1
                self.stopped.wait(max(0.0, 1.0 / rate - (time.monotonic() - start)))
            if not self.stopped.is_set():
                self.log(f"[{self.name}] no success within {timeout:g} s: {self.truth()['detail']}")
            return False
        finally:
            self.rest()


def against(hand: Pose, goal: Pose) -> tuple[float, float, float]:
    """The hand against a goal: sideways [m], above it [m], turned from it [rad]."""
    return (
        float(np.linalg.norm((hand.pos - goal.pos)[:2])),
        float(hand.pos[2] - goal.pos[2]),
        float((goal.rot * hand.rot.inv()).magnitude()),
    )


def touched(truth: dict) -> set[str]:
    """What the task's object touches (the ground truth's `touching`: "left/gripper,posts")."""
    return set(filter(None, truth.get("values", {}).get("touching", "").split(",")))


def objects(truth: dict) -> dict[str, Pose]:
    return {name: Pose.of(p) for name, p in truth["objects_in_base"].items()}


# ====================================================================== ram_insertion
RAM_TARGET = (0.5881241235410154, -0.03578590131997776, 0.27843494179085326)  # config.py TARGET_POSE


class RamInsertion(Expert):
    """The stick is held from the start (GripperCloseEnv: no gripper). Line it up over the DIMM slot, its
    bottom edge 12 mm above the groove's floor (the slot's walls are 7 mm high), then lower it and press
    5 mm below seated until it is in; back up and line up again if it lands beside the groove."""

    name = "ram_insertion"
    arm_configs = (
        ArmConfig(
            "http://127.0.0.2:5000/",
            (0.01, 0.06),
            tuple(np.subtract(RAM_TARGET, (0.03, 0.02, 0.01))),
            tuple(np.add(RAM_TARGET, (0.03, 0.02, 0.05))),
            "fixed",
        ),
    )
    HALF_HEIGHT = 0.03125 / 2  # the stick's centre above its bottom edge (config/tasks/ram_insertion.yaml)
    ABOVE = 0.012  # [m] the bottom edge this far above the floor while lining up
    PRESS = 0.005  # [m] aim this far below seated while inserting
    LINED_UP = 0.0005  # [m] lateral error to start down
    LINED_UP_ANGLE = 0.01  # [rad]
    OFF_GROOVE = 0.0013  # [m] lateral error that lands on the wall: back up
    SETTLED = 0.0015  # [m] done once the stick is this close to seated (success is 2.5 mm)

    def finished(self, truth: dict) -> bool:
        return bool(truth["success"]) and float(truth["values"].get("error_m", 0.0)) <= self.SETTLED

    def tick(self, truth: dict) -> None:
        arm = self.arms[0]
        things = objects(truth)
        ram, slot = things["ram"], things["dimm_slot"]
        in_hand = arm.hand.inv() * ram
        up = slot.rot.apply([0.0, 0.0, 1.0])
        seated = slot.pos + self.HALF_HEIGHT * up
        # the stick's orientations that fit the groove: long side along the slot's x, either way round
        fits = [slot.rot * Rotation.from_euler("x", np.pi), slot.rot * Rotation.from_euler("y", np.pi)]
        goal_rot = closest(ram.rot, fits + [slot.rot, slot.rot * Rotation.from_euler("z", np.pi)])
        offset = ram.pos - seated
        height = float(offset @ up)
        lateral = float(np.linalg.norm(offset - height * up))
        angle = float(np.linalg.norm(rotation_error(ram.rot, goal_rot)))
        if self.phase != "insert":
            self.set_phase("line up")
            target = seated + self.ABOVE * up
            if lateral < self.LINED_UP and angle < self.LINED_UP_ANGLE and abs(height - self.ABOVE) < 0.003:
                self.set_phase("insert")
        if self.phase == "insert":
            target = seated - self.PRESS * up
            if lateral > self.OFF_GROOVE and height > 0.004:
                self.set_phase("line up")  # on the wall: up and again
                target = seated + self.ABOVE * up
        goal = arm.clamp(Pose(target, goal_rot) * in_hand.inv())
        fine = lateral < 0.003
        action = step_toward(arm.hand, goal, arm.config.action_scale, gain=0.5 if fine else 0.7)
        arm.command(action)


# ====================================================================== usb_pickup_insertion
USB_TARGET = (0.553, 0.1769683108549487, 0.25097833796596336)  # config.py TARGET_POSE (its rpy: pi, 0, -pi/2)


class UsbPickupInsertion(Expert):
    """The stick lies on the platform after USBEnv's reset. Open, come down over it with the hand along
    the stick (plug ahead), fingertips pressed on the platform, close; then line the plug up 15 mm in
    front of the port's hole, at the hole's height, and push it in 3 mm past plugged."""

    name = "usb_pickup_insertion"
    arm_configs = (
        ArmConfig(
            "http://127.0.0.2:5000/",
            (0.015, 0.1),
            tuple(np.subtract(USB_TARGET, (0.03, 0.01, 0.03))),
            tuple(np.add(USB_TARGET, (0.03, 0.06, 0.05))),
            "Robotiq",
        ),
    )
    PLUGGED = (0.0, 0.03, 0.0)  # the stick's frame when plugged in, in the port's frame (usb_pickup_insertion.yaml)
    PLUGGED_ROT = Rotation.from_euler("xyz", [np.pi, 0.0, -np.pi / 2])  # its plug (x) along -y, into the hole
    GRASP_HEIGHT = 0.0137  # [m] TCP above the stick's centre when held as at TARGET_POSE
    # down from 4 cm over it, the fingertips pressed on the platform (aiming 4 mm below the grasp height)
    PICK = Grasp(
        0.04, 0.002, (-np.inf, 0.002), turned=0.03, over_lateral=0.003, over_turned=0.05, press=0.004, open_ticks=10
    )
    IN_FRONT = 0.015  # [m] line up with the plug this far out of the hole
    # [m] lined up once the plug is this near the hole's axis (the hole has 1.25 mm of play each side): closer
    # than that, the stick held on the platform by static friction barely moves for the fine corrections
    LINED_UP = 0.001
    PUSH = 0.003  # [m] push this far past plugged
    SLIDE_PRESS = 0.001  # [m] the hand this much below the grasp height while sliding (the stick on the platform)
    SETTLED = 0.0025  # [m] done once the stick is this close to plugged in (success is 4 mm)
    SUCCESS = 0.004  # [m] the task's tolerance (config/tasks/usb_pickup_insertion.yaml)
    # inserting, short of success, the plug this many ticks without going 0.5 mm deeper: stuck; back out to
    # the line-up point and come in again, as a person does (it says where the plug was)
    STUCK_TICKS = 15
    PROGRESS = 0.0005  # [m]
    # lining up, the hand pushes harder while the stick does not follow (a person leaning in): the stick held on
    # the platform by static friction does not follow a step of half its error once that is under a few mm (after
    # the policy's turn, the line-up stalled 1-4 mm off until the env's step limit in 8 of 31 training episodes)
    LEAN_GAIN = 0.3  # of the line-up error added to the push each tick the stick moved less than FOLLOWS
    LEAN_MAX = 0.006  # [m] (the experiment's compliance clips the pull at 5-6 mm of the spring)
    FOLLOWS = 0.0002  # [m] a tick's move of the stick that shows it follows: the push eases off by half
    # lining up, the stick's centre this far above the hole's for HOVER_TICKS (the hand lowered it as far as it
    # goes: a policy's grasp left it deep in the fingers, their tips on the platform): the plug would meet the
    # port's lip 9.6 mm out (seen in training), so let go and take it again as USBEnv's reset does. (The hand
    # perched 3 mm above its aim is no such sign: it let go after its own grasp in 9 of 37 training episodes.)
    # A stick that high does not go in to insert, however well lined up (a policy's grasp that came lined up went
    # in at once, short of those ticks: usb run 20, 23 of 24 stuck insertions 9.6 mm out and 3.5-3.7 mm high)
    HOVERING = 0.0025  # [m]
    HOVER_TICKS = 10
    # holding it, the stick pitched in the fingers (a grasp closed with the hand tilted, as a policy's can be within
    # the env's 0.1 rad): the hand tilts so that the stick is level, as a person does. Nose up by ~1.4 deg its plug
    # meets the port's upper lip (64 stalls in a training run, pitched -3..+6 deg, median +3, with the hand level);
    # beyond what the env's limits let the hand tilt, let go and take it again
    LEVEL_MAX = 0.08  # [rad]

    def finished(self, truth: dict) -> bool:
        return bool(truth["success"]) and float(truth["values"].get("error_m", 0.0)) <= self.SETTLED

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.closing = 0  # ticks the left button has been held
        self.deepest = (-np.inf, 0)  # inserting: the plug's deepest depth so far [m], and the tick it got there
        self.plug: tuple[float, float, float] | None = None  # holding it: the plug's depth, lateral [m], yaw [rad]
        self.pick: Pose | None = None  # taking it: the grasp it aims at
        self.lean = np.zeros(2)  # lining up: the push beyond the error that the static friction holds back [m]
        self.was = None  # lining up: where the stick was at the last tick (xy) [m]
        self.hovering = 0  # ticks the held stick has been HOVERING above the hole's height

    def standing(self) -> str:
        """Holding the stick: its phase and the plug against the hole (a line-up waits for 1 mm aside, 0.02 rad
        of yaw and the plug 11-19 mm out). Taking it: the hand against the grasp, and the grasp against the env's
        limits (a stick pushed where the hand cannot take it)."""
        if self.pick is not None:
            return f"{self.phase}: {self.arms[0].aiming(self.pick)}"
        if self.plug is None or self.phase not in ("line up with the port", "insert"):
            return super().standing()
        depth, lateral, turn = self.plug
        return (
            f"{self.phase}: the plug {-depth * 1000:.1f} mm out, {lateral * 1000:.1f} mm aside, "
            f"yawed {np.degrees(turn):+.1f} deg"
        )

    def after_success(self) -> None:
        """Let go of the plugged-in stick with the gripper wide open (with reopen_robotiq): USBEnv's next
        reset then grasps it, which it cannot with the Robotiq at the original's open position."""
        if self.reopen_robotiq:
            self.arms[0].open_fully()

    def held(self, arm: Arm, usb: Pose) -> bool:
        """The stick between the closed fingers: near the TCP, and the fingers closer than the 175 position."""
        grasp_point = arm.hand.pos + arm.hand.rot.apply([0.0, 0.0, self.GRASP_HEIGHT])
        return np.linalg.norm(usb.pos - grasp_point) < 0.012 and arm.gripper < 0.28

    def where(self, arm: Arm, usb: Pose, plugged: Pose, depth: float, lateral: float, turn: float) -> str:
        """Where the plug is against the hole, and the hand against the env's limits (what a stuck insertion
        needs to be understood)."""
        along = usb.rot.apply([1.0, 0.0, 0.0])
        return (
            f"the plug {-depth * 1000:.1f} mm out, {lateral * 1000:.1f} mm aside, "
            f"{(usb.pos[2] - plugged.pos[2]) * 1000:+.1f} mm high, pitched {np.degrees(np.arcsin(along[2])):+.1f} deg,"
            f" yawed {np.degrees(turn):+.1f} deg; the hand at {np.round(arm.hand.pos, 4).tolist()} "
            f"({arm.config.limits}), "
            f"the gripper {arm.gripper:.2f}; backing out to line up again"
        )

    def levelled(self, arm: Arm, along: np.ndarray, turn: float) -> Rotation | None:
        """The hand's rotation that holds the stick (its plug toward `along`) level and turned by `turn` [rad] about
        the vertical: the hand level and yawed, then tilted by the stick's pitch in the fingers about the horizontal
        axis across the stick. None when that tilt is beyond LEVEL_MAX."""
        level = Rotation.from_euler("xyz", [np.pi, 0.0, arm.hand.rot.as_euler("xyz")[2] + turn])
        ahead = level.apply(arm.hand.rot.inv().apply(along))  # the stick's direction were the hand level
        across = np.cross([0.0, 0.0, 1.0], ahead)  # turning about it by +angle brings `ahead` down
        tilt = float(np.arcsin(np.clip(ahead[2], -1.0, 1.0)))
        if abs(tilt) > self.LEVEL_MAX:
            return None
        return Rotation.from_rotvec(tilt * across / np.linalg.norm(across)) * level

    def tick(self, truth: dict) -> None:
        arm = self.arms[0]
        things = objects(truth)
        usb, port = things["usb"], things["usb_port"]
        plugged = port * Pose.at(self.PLUGGED, self.PLUGGED_ROT)
        into = plugged.rot.apply([1.0, 0.0, 0.0])  # the plug's direction into the hole
        if self.held(arm, usb):
            # slide it along the platform into the port, the hand at the height of the grasp, turned so that the
            # plug points into the hole and tilted so that the stick is level (its pitch in the fingers, not in
            # the world: the stick pivots a little in them, and following that or its height with the hand would
            # pull it out of them)
            self.closing = 0
            offset = usb.pos - plugged.pos
            depth = float(offset @ into)  # how far in past plugged (negative: still out)
            lateral = float(np.linalg.norm((offset - depth * into)[:2]))
            along = usb.rot.apply([1.0, 0.0, 0.0])
            turn = float(np.arctan2(along[0] * into[1] - along[1] * into[0], along[:2] @ into[:2]))  # its yaw error
            self.plug, self.pick = (depth, lateral, turn), None
            height = plugged.pos[2] + self.GRASP_HEIGHT - self.SLIDE_PRESS  # the hand's, lining up and inserting
            raised = usb.pos[2] - plugged.pos[2] > self.HOVERING
            self.hovering = self.hovering + 1 if raised and self.phase != "insert" else 0
            hand_rot = self.levelled(arm, along, turn)
            if self.hovering > self.HOVER_TICKS or hand_rot is None:
                self.set_phase(f"let go of the stick held too {'high' if hand_rot is not None else 'crooked'}")
                arm.command(None, "open")
                return
            if self.phase != "insert" or lateral > 0.002:
                self.set_phase("line up with the port")
                depth_goal = -self.IN_FRONT
                lined_up = lateral < self.LINED_UP and abs(turn) < 0.02 and abs(depth + self.IN_FRONT) < 0.004
                if lined_up and not raised:  # held too high, the plug would stop on the port's lip
                    self.set_phase("insert")
            if self.phase == "insert":
                depth_goal = self.PUSH
                if depth > self.deepest[0] + self.PROGRESS:
                    self.deepest = (depth, self.ticks)
                elif depth < -self.SUCCESS and self.ticks - self.deepest[1] > self.STUCK_TICKS:
                    self.log(f"[{self.name}] stuck: {self.where(arm, usb, plugged, depth, lateral, turn)}")
                    self.set_phase("line up with the port")
                    depth_goal = -self.IN_FRONT
            move = (plugged.pos + depth_goal * into - usb.pos)[:2]
            if self.phase != "insert":
                self.deepest = (-np.inf, self.ticks)
                moved = np.inf if self.was is None else float(np.linalg.norm(usb.pos[:2] - self.was))
                lean = self.lean + self.LEAN_GAIN * move if moved < self.FOLLOWS else self.lean / 2
                self.lean = np.clip(lean, -self.LEAN_MAX, self.LEAN_MAX)
                self.was = usb.pos[:2]
                move = move + self.lean
            else:
                self.lean, self.was = np.zeros(2), None
            goal = Pose(np.array([*(arm.hand.pos[:2] + move), height]), hand_rot)
            arm.command(step_toward(arm.hand, arm.clamp(goal), arm.config.action_scale, gain=0.5, max_translation=0.6))
            return
        # pick it up: the hand along the stick (its x along the stick's plug direction), z down, the
        # fingertips pressed on the platform (as USBEnv's reset grasps it plugged in)
        self.lean, self.was, self.hovering = np.zeros(2), None, 0
        along = usb.rot.apply([1.0, 0.0, 0.0])
        hand_rot = Rotation.from_euler("xyz", [np.pi, 0.0, np.arctan2(along[1], along[0])])
        grasp = Pose(usb.pos + [0.0, 0.0, self.GRASP_HEIGHT], hand_rot)
        self.plug, self.pick = None, grasp
        action, button, self.closing = self.take(arm, grasp, self.PICK, self.closing, "the stick")
        arm.command(action, button)


# ====================================================================== pick_cube (this project's default task)
class PickCube(Expert):
    """Over the cube with the jaws square to it, down, close, lift 10 cm (success: held off the table)."""

    name = "pick_cube"
    arm_configs = (ArmConfig("http://127.0.0.1:5000/", (0.02, 0.1), (0.35, -0.25, 0.0), (0.75, 0.25, 0.45)),)
    GRASP_ABOVE_CENTRE = 0.01  # [m] TCP above the cube's centre when closing
    PICK = Grasp(0.08, 0.003, (-0.004, 0.004), turned=0.05, over_lateral=0.004, over_turned=0.08)
    LIFT = 0.10

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.closing = 0

    def tick(self, truth: dict) -> None:
        arm = self.arms[0]
        cube = objects(truth)["cube"]
        # the jaws square to the cube: the cube's faces every 90 deg, the one nearest the hand's yaw
        hand_yaw = arm.hand.rot.as_euler("xyz")[2]
        cube_yaw = cube.rot.as_euler("xyz")[2]
        yaw = cube_yaw + np.pi / 2 * np.round((hand_yaw - cube_yaw) / (np.pi / 2))
        hand_rot = Rotation.from_euler("xyz", [np.pi, 0.0, yaw])
        grasp = Pose(cube.pos + [0.0, 0.0, self.GRASP_ABOVE_CENTRE], hand_rot)
        if arm.holds(touched(truth)):
            self.closing = 0
            self.set_phase("lift")
            goal = Pose(arm.hand.pos + [0.0, 0.0, grasp.pos[2] + self.LIFT - arm.hand.pos[2]], hand_rot)
            arm.command(step_toward(arm.hand, arm.clamp(goal), arm.config.action_scale, gain=0.5))
            return
        action, button, self.closing = self.take(arm, grasp, self.PICK, self.closing, "the cube")
        arm.command(action, button)


# ====================================================================== object_handover
class ObjectHandover(Expert):
    """Two SpaceMice (DualSpacemouseIntervention: left arm, then right). The left hand takes the bar off its
    posts by its left half and lifts it; the right hand comes down on its right half and closes; the left
    hand opens and backs away; success once the right gripper alone holds it."""

    name = "object_handover"
    arm_configs = (  # examples/experiments/object_handover/config.py: LeftEnvConfig, RightEnvConfig
        ArmConfig("http://127.0.0.1:5000/", (0.04, 0.2), (0.40, -0.03, 0.30), (0.67, -0.01, 0.42), "Franka"),
        ArmConfig("http://127.0.0.2:5000/", (0.04, 0.2), (0.32, -0.01, 0.36), (0.67, 0.01, 0.50), "Robotiq"),
    )
    LEFT_ROT = Rotation.from_euler("xyz", [np.pi, 0.0, 0.0])  # LeftEnvConfig.RESET_POSE's orientation
    RIGHT_ROT = Rotation.from_euler("xyz", [np.pi, 0.0, np.pi])  # RightEnvConfig.RESET_POSE's
    LEFT_GRIP = -0.04  # [m] along the bar (world x) from its centre: the left hand's half
    RIGHT_GRIP = 0.05  # the right hand's half
    RIGHT_GRIP_MAX = 0.08  # [m] its farthest from the centre: the 20 cm bar's end, less the Robotiq's pads
    LIFT_TO = 0.40  # [m] the bar's height (world) for the handover: within both arms' limits
    # [m] the right hand's grasp carried this far inside its env's limits: along the bar only (the two arms' y
    # limits meet at world y -0.01 alone: a margin there is out of the left hand's reach); carried once within
    # CARRIED of there
    REACH_MARGIN = np.array([0.01, 0.0, 0.0])
    CARRIED = 0.003
    HOLD_OFF_AXIS = 0.015  # [m] the right fingertips' centre from the bar's axis when it holds it: its half width
    PICK = Grasp(0.06, 0.004, (-0.005, 0.005), over_lateral=0.006, close_ticks=40, max_translation=0.5)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.closing = [0, 0]
        self.bases: list[Pose] = []  # each arm's base in the world (GET /task of its server)
        self.aim: tuple[int, Pose] | None = None  # this tick: the arm taking the bar, and its grasp (its base frame)
        # this tick, lifting: the bar's height, the carry still to go [m], where the left hand holds it along the
        # bar [m], and the right hand's grasp (its base frame)
        self.lifting: tuple[float, float, float, np.ndarray] | None = None

    def standing(self) -> str:
        """Taking the bar: which hand, the hand against its grasp, and the grasp against that arm's limits (after a
        policy's own pick the right hand's grasp can lie where its env's limits keep it from). Lifting: the bar
        against the handover's height and the carry still to go, and the left hand against its limits."""
        if self.lifting is not None:
            height, to_carry, held_at, right_at = self.lifting
            left, right = self.arms
            return (
                f"{self.phase}: the bar's centre at z {height:.3f} m (lifted above {self.LIFT_TO - 0.02:.2f}), "
                f"{to_carry * 1000:.1f} mm to carry across, held {held_at * 1000:+.0f} mm along it; the left hand at "
                f"{np.round(left.hand.pos, 4).tolist()} ({left.config.limits}), the right hand's grasp at "
                f"{np.round(right_at, 4).tolist()} ({right.config.limits})"
            )
        if self.aim is None:
            return super().standing()
        index, grasp = self.aim
        return f"{self.phase}: the {('left', 'right')[index]} arm: {self.arms[index].aiming(grasp)}"

    def approach(self, index: int, arm: Arm, grasp: Pose) -> tuple[np.ndarray, str | None]:
        """Action and button to come down on `grasp` from above, open, and close there."""
        self.aim = (index, grasp)
        action, button, self.closing[index] = self.take(arm, grasp, self.PICK, self.closing[index])
        return action, button

    def tick(self, truth: dict) -> None:
        left, right = self.arms
        touching = touched(truth)
        bar_world = Pose.of(truth["objects"]["bar"])
        along = bar_world.rot.apply([1.0, 0.0, 0.0])
        if not self.bases:
            self.bases = [Pose.of(truth["base"]), Pose.of(right.server.task()["base"])]

        def in_base(i: int, point) -> np.ndarray:
            return (self.bases[i].inv() * Pose.at(point)).pos

        def in_world(i: int, point) -> np.ndarray:
            return (self.bases[i] * Pose.at(point)).pos

        # a hand holds the bar when it touches it closed; the right hand (whose hold lets the left hand go) also
        # with its fingertips' centre inside the bar's section: after a policy's takeover its closed fingers can
        # touch the bar beside or on top of it, and a left hand that let go then dropped the bar (run 11)
        right_off_axis = in_world(1, right.hand.pos) - bar_world.pos
        right_off_axis -= (right_off_axis @ along) * along
        left_holds = left.holds(touching, "left/gripper")
        right_holds = right.holds(touching, "right/gripper") and np.linalg.norm(right_off_axis) < self.HOLD_OFF_AXIS
        left_point = bar_world.pos + self.LEFT_GRIP * along
        right_point = bar_world.pos + self.RIGHT_GRIP * along
        left_action, left_button = np.zeros(6), None
        right_action, right_button = np.zeros(6), None
        self.aim, self.lifting = None, None
        if not left_holds and not right_holds:
            self.set_phase("left hand to the bar")
            left_action, left_button = self.approach(0, left, Pose(in_base(0, left_point), self.LEFT_ROT))
            right_action, right_button = self.wait_above(right, in_base(1, right_point))
        elif left_holds and not right_holds:
            self.closing[0] = 0
            # the right hand takes the bar as far from the left hand as the demos' grips are apart, wherever the
            # left hand holds it (after a policy's pick, RIGHT_GRIP can lie beside the left hand's fingers)
            held_at = float((in_world(0, left.hand.pos) - bar_world.pos) @ along)
            right_point = bar_world.pos + min(held_at + self.RIGHT_GRIP - self.LEFT_GRIP, self.RIGHT_GRIP_MAX) * along
            # the bar up to LIFT_TO and, across, to where the right hand's grasp lies within its env's limits; the
            # left hand moves by what the bar has to, from wherever it holds it (a policy's pick does not take the
            # bar by LEFT_GRIP: a hand sent to left_point drags the bar after it to the left arm's limits)
            right_at = in_base(1, right_point)
            reach = np.clip(right_at, right.config.low + self.REACH_MARGIN, right.config.high - self.REACH_MARGIN)
            across = self.bases[1].rot.apply([*(reach - right_at)[:2], 0.0])
            carry = np.array([*across[:2], self.LIFT_TO - bar_world.pos[2]])
            lift_goal = Pose(left.hand.pos + self.bases[0].rot.inv().apply(carry), self.LEFT_ROT)
            left_action = step_toward(left.hand, left.clamp(lift_goal), left.config.action_scale, gain=0.5,
                                      max_translation=0.4)  # fmt: skip
            to_carry = float(np.linalg.norm(across[:2]))
            lifted = bar_world.pos[2] > self.LIFT_TO - 0.02 and to_carry < self.CARRIED
            if not lifted:
                self.set_phase("lift")
                self.lifting = (float(bar_world.pos[2]), to_carry, held_at, right_at)
                right_action, right_button = self.wait_above(right, in_base(1, right_point))
            else:
                self.set_phase("right hand to the bar")
                grasp = Pose(in_base(1, right_point), self.RIGHT_ROT)
                right_action, right_button = self.approach(1, right, grasp)
        elif right_holds and left_holds:
            self.closing[1] = 0
            self.set_phase("left hand lets go")
            left_button = "open"
        else:  # the right hand alone: the left backs away (success is checked before the next tick)
            self.closing = [0, 0]
            self.set_phase("left hand away")
            away = Pose(left.hand.pos + [-0.05, 0.0, 0.03], self.LEFT_ROT)
            left_action = step_toward(left.hand, left.clamp(away), left.config.action_scale, gain=0.5)
        left.command(left_action, left_button)
        right.command(right_action, right_button)

    def wait_above(self, arm: Arm, point: np.ndarray) -> tuple[np.ndarray, str | None]:
        """Hold the right hand at its height, over where it will take the bar, open."""
        goal = Pose(np.array([*point[:2], arm.hand.pos[2]]), self.RIGHT_ROT)
        return step_toward(arm.hand, arm.clamp(goal), arm.config.action_scale, gain=0.3, max_translation=0.3), (
            self.ensure_open(arm) if not arm.gripper_open else None
        )


# ====================================================================== egg_flip
class EggFlip(Expert):
    """No expert: in this simulation no wrench sequence within the original controller's limits turns the
    egg over (docs/tasks.md, "Known limit"; measured in tests/test_egg_flip.py), so none can be scripted;
    this says so instead of pretending."""

    name = "egg_flip"

    def __init__(self, *args, **kwargs) -> None:
        raise ExpertBlocked(
            "egg_flip has no scripted expert: no wrench sequence within the original egg-flip controller's "
            "limits flips the egg in this simulation: the model's arm (0.1 kg m^2 of rotor inertia per joint; "
            "the FR3's torque-control identification has 0.074 to 0.195) cannot pull the pan down under the egg "
            "faster than gravity (docs/tasks.md, egg_flip, 'Known limit'); the flip is open"
        )


EXPERTS: dict[str, type[Expert]] = {
    e.name: e for e in (RamInsertion, UsbPickupInsertion, ObjectHandover, PickCube, EggFlip)
}
