"""ram_insertion from proprioception alone: HIL-SERL's ram_insertion experiment without its cameras.

The same RAMEnv, random reset, action scale, pose limits and compliance sets (its EnvConfig, inherited), the same
GripperCloseEnv and SpacemouseIntervention, HIL-SERL's SERLObsWrapper and ChunkingWrapper. What differs, each the
consequence of having no images:
- observations: tcp_pose, tcp_vel, tcp_force, tcp_torque (no images; no gripper_pose, the gripper is held closed);
- tcp_pose relative to TARGET_POSE (observation.TargetFrame) instead of to the episode's random start
  (RelativeFrame), whose offset only the wrist images located; actions in the base frame, as FrankaEnv takes them;
- each state value in units of what the task resolves, 1 mm, 0.01 rad, 1 cm/s, ... (observation.TaskUnits), not SI
  units (`state_units`);
- the reward is the simulator's ground truth (GET /task success), not a classifier on the images: this config's
  choice, which only a simulator offers; and between episodes a stick that has moved in the hand is put back
  (POST /task/reset), as a person at the real set-up would, counted in the actor's output;
- the server is $FRANKA_SIM_URL (default the ram_insertion world's), so that several worlds each have their actor;
- SAC's target entropy is -6 (-|A|, SAC's own heuristic), not make_sac_pixel_agent's -3 (agent_kwargs);
- the step period is held at FrankaEnv's own 100 ms (step_period.StepPeriod: FrankaEnv sleeps to 100 ms from its
  step's start, and what runs after its sleep, 15-20 ms beside a learner on 2 cores, would come on top).
"""

from franka_env.envs.wrappers import GripperCloseEnv, SpacemouseIntervention
from ground_truth import GroundTruth, server_url
from observation import TargetFrame, TaskUnits
from serl_launcher.wrappers.chunking import ChunkingWrapper
from serl_launcher.wrappers.serl_obs_wrappers import SERLObsWrapper
from state_config import StateEnvConfig, StateTrainConfig
from step_period import StepPeriod

from experiments.ram_insertion.config import EnvConfig as RAMInsertionEnvConfig
from experiments.ram_insertion.config import TrainConfig as RAMInsertionTrainConfig
from experiments.ram_insertion.wrapper import RAMEnv

WORLD = "ram_insertion"  # scripts/hil_serl.py: the simulated world it runs on, and that world's launch arguments
WORLD_ARGS = "cameras_config:=none"


class EnvConfig(StateEnvConfig, RAMInsertionEnvConfig):
    SERVER_URL = server_url("http://127.0.0.2:5000/")  # the ram_insertion world's


class TrainConfig(StateTrainConfig, RAMInsertionTrainConfig):
    proprio_keys = ["tcp_pose", "tcp_vel", "tcp_force", "tcp_torque"]
    checkpoint_period = 2000  # learner steps (ram_insertion: 5000, at about 1 step/s with images on a GPU)
    steps_per_update = 50

    def get_environment(self, fake_env=False, save_video=False, classifier=False, intervention=True):
        """HIL-SERL's signature; `classifier` is ignored (the ground truth rewards), `intervention=False` leaves
        out the SpaceMouse (an evaluation of the policy alone)."""
        config = EnvConfig()
        env = RAMEnv(fake_env=fake_env, save_video=save_video, config=config)
        env = GripperCloseEnv(env)
        if not fake_env and intervention:
            env = SpacemouseIntervention(env)
        env = TargetFrame(env, config.TARGET_POSE)
        if self.state_units:
            env = TaskUnits(env)
        env = SERLObsWrapper(env, proprio_keys=self.proprio_keys)
        env = ChunkingWrapper(env, obs_horizon=1, act_exec_horizon=None)
        if not fake_env:
            env = GroundTruth(env, config.SERVER_URL, held="ram")
            env = StepPeriod(env)
        return env
