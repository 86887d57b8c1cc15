"""usb_pickup_insertion from proprioception and the stick's privileged pose: HIL-SERL's usb_pickup_insertion
experiment without its cameras, its gripper learned.

The same USBEnv, reset (it pulls the plugged stick out and drops it on the platform), random reset, action scale,
pose limits and compliance sets (its EnvConfig, inherited), the same SpacemouseIntervention, GripperPenaltyWrapper
(-0.02 for each change of the gripper), setup mode `single-arm-learned-gripper` (train_rlpd.py's hybrid agent: SAC
for the arm's six values, a DQN grasp critic for the gripper's close / stay / open), SERLObsWrapper and
ChunkingWrapper. What differs, each the consequence of having no images:
- observations: tcp_pose, tcp_vel, tcp_force, tcp_torque, gripper_pose, and **privileged_usb_pose**: the stick's
  pose from the simulator's ground truth (observation.PrivilegedPose). No sensor of the real set-up gives it:
  HIL-SERL's policy finds the stick in its three camera images, and without them nothing tells where it fell;
- tcp_pose and the stick's pose relative to TARGET_POSE (observation.TargetFrame; the plugged stick's frame is
  TARGET_POSE's), not to the episode's random start (RelativeFrame) in Euler angles (Quat2EulerWrapper); actions
  in the base frame, as FrankaEnv takes them;
- each state value in units of what the task resolves, 1 mm, 0.01 rad, 1 cm/s, ... (observation.TaskUnits);
- the reward is the simulator's ground truth (GET /task success), not a classifier on the side camera; an
  episode that ends without success leaves the stick elsewhere, and before the next one it is plugged back in
  (POST /task/reset) so that USBEnv's reset can take it out again, as a person at the real set-up would
  (ground_truth.GroundTruth, counted in the actor's output);
- the server is $FRANKA_SIM_URL (default the usb_pickup_insertion world's), so that several worlds each have their
  actor;
- SAC's target entropy is -6 (-|A| of the arm's six values; the hybrid agent's default is -|A|/2 of all seven):
  ram_insertion_state's evidence (docs/learning.md);
- the agent and the learner as in the run that met the goal (usb run 19, docs/learning.md): ten SAC critics of which
  two make each target, four grasp critics, a slower target (0.002), the expert's actions in the losses (the demo
  half's behaviour cloning and grasp margin), at most two critic updates per transition (HIL-SERL's discount 0.98
  kept); and the scripted expert's schedule of that run (EXPERT_ARGS);
- the step period is held at FrankaEnv's own 100 ms (step_period.StepPeriod).
"""

from franka_env.envs.wrappers import SpacemouseIntervention
from ground_truth import GroundTruth, server_url
from observation import UNITS, PrivilegedPose, TargetFrame, TaskUnits
from serl_launcher.wrappers.chunking import ChunkingWrapper
from serl_launcher.wrappers.serl_obs_wrappers import SERLObsWrapper
from state_config import StateEnvConfig, StateTrainConfig
from step_period import StepPeriod

from experiments.usb_pickup_insertion.config import EnvConfig as USBEnvConfig
from experiments.usb_pickup_insertion.config import TrainConfig as USBTrainConfig
from experiments.usb_pickup_insertion.wrapper import GripperPenaltyWrapper, USBEnv

WORLD = "usb_pickup_insertion"  # scripts/hil_serl.py: the simulated world it runs on, and that world's launch arguments
WORLD_ARGS = "cameras_config:=none"
PRIVILEGED_OBJECT = "usb"  # the object whose pose the policy is given (privileged_usb_pose)
# scripts/hil_serl.py: the scripted expert's defaults for this experiment (a flag on the command line wins): it
# leaves each training episode to the policy for 2 s, 4 s from the loop's first evaluation on, and steps in sooner
# once the policy has held the arm still for 1 s
EXPERT_ARGS = "--patience 2 --patience-grows 0:4 --stalled 1"


class EnvConfig(StateEnvConfig, USBEnvConfig):
    SERVER_URL = server_url("http://127.0.0.2:5000/")  # the usb_pickup_insertion world's


class TrainConfig(StateTrainConfig, USBTrainConfig):
    privileged_keys = ["privileged_usb_pose"]  # from the simulator's ground truth: no real sensor gives them
    proprio_keys = ["tcp_pose", "tcp_vel", "tcp_force", "tcp_torque", "gripper_pose", *privileged_keys]
    checkpoint_period = 2000  # learner steps (as HIL-SERL's usb_pickup_insertion)
    max_updates_per_transition = 2  # state_agent.pace
    agent_kwargs = {
        "target_entropy": -6.0,
        "critic_ensemble_size": 10,
        "critic_subsample_size": 2,
        "grasp_critic_ensemble_size": 4,
        "soft_target_update_rate": 0.002,
        "demo_bc_weight": 0.5,
        "demo_grasp_margin": 0.1,
    }

    def get_environment(self, fake_env=False, save_video=False, classifier=False, intervention=True):
        """HIL-SERL's signature; `classifier` is ignored (the ground truth rewards), `intervention=False` leaves
        out the SpaceMouse (an evaluation of the policy alone)."""
        config = EnvConfig()
        env = USBEnv(fake_env=fake_env, save_video=save_video, config=config)
        if not fake_env and intervention:
            env = SpacemouseIntervention(env)
        env = TargetFrame(env, config.TARGET_POSE)
        env = PrivilegedPose(env, config.TARGET_POSE, config.SERVER_URL, PRIVILEGED_OBJECT)
        if self.state_units:
            env = TaskUnits(env, {**UNITS, "privileged_usb_pose": UNITS["tcp_pose"]})
        env = SERLObsWrapper(env, proprio_keys=self.proprio_keys)
        env = ChunkingWrapper(env, obs_horizon=1, act_exec_horizon=None)
        if not fake_env:
            env = GroundTruth(env, config.SERVER_URL, held=None)
        env = GripperPenaltyWrapper(env, penalty=-0.02)
        if not fake_env:
            env = StepPeriod(env)
        return env
