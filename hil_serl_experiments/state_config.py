"""What this repository's state experiments share in their EnvConfig and TrainConfig (runs in HIL-SERL's
environment).

`StateEnvConfig` goes before HIL-SERL's experiment's EnvConfig in a config's bases: no cameras, no crops, no image
window (each config still names its own SERVER_URL default: scripts/hil_serl.py reads it from the config's text).

`StateTrainConfig` goes before HIL-SERL's experiment's TrainConfig in a config's bases: no image or classifier keys,
the state agent (state_agent.py), the state in the task's units, SAC's target entropy -6 (-|A| of the arm's six
values: make_sac_pixel_agent's -|A|/2 let its samples stray 2-3 mm a step from their mean; docs/learning.md), the
learner's pace (`max_updates_per_transition`, state_agent.pace; None: as fast as it can), and the run's overrides
($HIL_SERL_TRAIN_CONFIG, $HIL_SERL_AGENT) applied when the config is made.
"""

import state_agent


class StateEnvConfig:
    REALSENSE_CAMERAS = {}
    IMAGE_CROP = {}
    DISPLAY_IMAGE = False


class StateTrainConfig:
    image_keys = []
    classifier_keys = []
    encoder_type = "state"  # hil_serl_experiments/state_agent.py: HIL-SERL's agent on the state alone
    buffer_period = 1000
    # the agent's hyperparameters beyond HIL-SERL's factory's (state_agent.configure)
    agent_kwargs: dict = {"target_entropy": -6.0}
    state_units = True  # the state in the task's units (observation.TaskUnits); False: SI units
    # at most this many critic updates per transition the actors send (state_agent.pace); None: the learner runs
    # as fast as it can, as train_rlpd.py's does
    max_updates_per_transition = None

    def __init__(self) -> None:
        state_agent.override(self)
        state_agent.configure(updates_per_step=self.cta_ratio, **self.agent_kwargs)
        state_agent.pace(self.max_updates_per_transition)
