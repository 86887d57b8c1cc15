"""object_handover from both arms' proprioception and the bar's privileged pose: HIL-SERL's object_handover
experiment without its cameras, both grippers learned.

The same HandOffEnv for each arm inside DualFrankaEnv (each arm's reset, reset pose, action scale, pose limits and
compliance sets: HIL-SERL's LeftEnvConfig and RightEnvConfig, inherited), the same DualSpacemouseIntervention, its
GripperPenaltyWrapper (-0.02 for each change of either gripper), setup mode `dual-arm-learned-gripper` (train_rlpd.py's
hybrid agent: SAC for the arms' twelve values, a DQN grasp critic for the two grippers' nine joint choices),
SERLObsWrapper and ChunkingWrapper. HandOffEnv's reset asks a person to press Enter (the bar put back on its
posts): scripts/hil_serl.py puts it back (POST /task/reset) and answers, as for HIL-SERL's own object_handover.
What differs, each the consequence of having no images:
- observations: each arm's tcp_pose, tcp_vel and gripper_pose (HIL-SERL's proprio_keys), and
  **world/privileged_bar_pose**: the bar's pose from the simulator's ground truth (observation.PrivilegedPose), in the
  left arm's frame. No sensor of the real set-up gives it: HIL-SERL's policy sees the bar in its cameras;
- each arm's tcp_pose relative to its own RESET_POSE (observation.TargetFrame; RANDOM_RESET is off, so that is a
  fixed frame, as TARGET_POSE is for the other state experiments), not DualRelativeFrame's per-episode frame in
  Euler angles; actions in each arm's base frame, as DualFrankaEnv takes them;
- each state value in units of what the task resolves (observation.TaskUnits);
- the servers are $FRANKA_SIM_URLS (left,right; default the object_handover world's);
- the reward is the simulator's ground truth (GET /task success: the right gripper alone holds the bar), not a
  classifier on the left side camera;
- DualFrankaEnv without its image window (display_images=False: it has no images to show);
- SAC's target entropy is -12 (-|A| of the arms' twelve values, as -6 is for one arm's six: ram_insertion_state's
  evidence, docs/learning.md);
- the step period is held at FrankaEnv's own 100 ms for both arms (step_period.StepPeriod).

The state's values come in gymnasium's sorted order of the keys: left/gripper_pose, left/tcp_pose, left/tcp_vel,
right/gripper_pose, right/tcp_pose, right/tcp_vel, world/privileged_bar_pose (the "world/" puts the privileged key
after both arms'). GripperPenaltyWrapper reads the right gripper at state[0, 13] after each step, which is right
there, as with HIL-SERL's own keys; its reset reads state[0, 19] (a value of right/tcp_pose, with HIL-SERL's keys as
with these): kept as it is, it only sets what the first step's right-gripper penalty compares with.
"""

from franka_env.envs.dual_franka_env import DualFrankaEnv
from franka_env.envs.wrappers import DualSpacemouseIntervention
from ground_truth import GroundTruth, arm_server_urls
from observation import UNITS, PrivilegedPose, TargetFrame, TaskUnits, arm_units
from serl_launcher.wrappers.chunking import ChunkingWrapper
from serl_launcher.wrappers.serl_obs_wrappers import SERLObsWrapper
from state_config import StateEnvConfig, StateTrainConfig
from step_period import StepPeriod

from experiments.object_handover.config import LeftEnvConfig as HandoverLeftEnvConfig
from experiments.object_handover.config import RightEnvConfig as HandoverRightEnvConfig
from experiments.object_handover.config import TrainConfig as HandoverTrainConfig
from experiments.object_handover.wrapper import GripperPenaltyWrapper, HandOffEnv

WORLD = "object_handover"  # scripts/hil_serl.py: the simulated world it runs on, and that world's launch arguments
WORLD_ARGS = "cameras_config:=none"
PRIVILEGED_OBJECT = "bar"  # the object whose pose the policy is given (world/privileged_bar_pose)
ARMS = ("left", "right")
# the servers: $FRANKA_SIM_URLS (left,right), else the object_handover world's (HIL-SERL's Left/RightEnvConfig)
LEFT_URL, RIGHT_URL = arm_server_urls(["http://127.0.0.1:5000/", "http://127.0.0.2:5000/"])


class LeftEnvConfig(StateEnvConfig, HandoverLeftEnvConfig):
    SERVER_URL = LEFT_URL


class RightEnvConfig(StateEnvConfig, HandoverRightEnvConfig):
    SERVER_URL = RIGHT_URL


class TrainConfig(StateTrainConfig, HandoverTrainConfig):
    privileged_keys = ["world/privileged_bar_pose"]  # from the simulator's ground truth: no real sensor gives it
    proprio_keys = [*HandoverTrainConfig.proprio_keys, *privileged_keys]
    checkpoint_period = 2000  # learner steps (object_handover: 5000, at about 1 step/s with images on a GPU)
    agent_kwargs = {"target_entropy": -12.0}  # -|A| of the arms' twelve values

    def get_environment(self, fake_env=False, save_video=False, classifier=False, intervention=True):
        """HIL-SERL's signature; `classifier` is ignored (the ground truth rewards), `intervention=False` leaves
        out the SpaceMice (an evaluation of the policy alone)."""
        left, right = LeftEnvConfig(), RightEnvConfig()
        env = DualFrankaEnv(
            HandOffEnv(fake_env=fake_env, save_video=save_video, config=left),
            HandOffEnv(fake_env=fake_env, save_video=save_video, config=right),
            display_images=False,
        )
        if not fake_env and intervention:
            env = DualSpacemouseIntervention(env, gripper_enabled=True)
        for arm, config in zip(ARMS, (left, right), strict=True):
            env = TargetFrame(env, config.RESET_POSE, f"{arm}/tcp_pose")
        env = PrivilegedPose(env, left.RESET_POSE, left.SERVER_URL, PRIVILEGED_OBJECT, prefix="world/")
        if self.state_units:
            env = TaskUnits(env, {**arm_units(ARMS), "world/privileged_bar_pose": UNITS["tcp_pose"]})
        env = SERLObsWrapper(env, proprio_keys=self.proprio_keys)
        env = ChunkingWrapper(env, obs_horizon=1, act_exec_horizon=None)
        if not fake_env:
            env = GroundTruth(env, left.SERVER_URL, held=None, puts_back=False)
        env = GripperPenaltyWrapper(env, penalty=-0.02)
        if not fake_env:
            env = StepPeriod(env)
        return env
