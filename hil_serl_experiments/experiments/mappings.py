"""HIL-SERL's CONFIG_MAPPING (its examples/experiments/mappings.py, loaded from there) and this repository's
experiments: what `--exp_name` of HIL-SERL's train_rlpd.py and record_demos.py can name."""

import importlib.util

from experiments import HIL_SERL_EXPERIMENTS
from experiments.object_handover_state.config import TrainConfig as ObjectHandoverStateTrainConfig
from experiments.ram_insertion_state.config import TrainConfig as RAMInsertionStateTrainConfig
from experiments.usb_pickup_insertion_state.config import TrainConfig as USBPickupInsertionStateTrainConfig

_spec = importlib.util.spec_from_file_location("experiments.hil_serl_mappings", HIL_SERL_EXPERIMENTS / "mappings.py")
_hil_serl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_hil_serl)

CONFIG_MAPPING = {
    **_hil_serl.CONFIG_MAPPING,
    "ram_insertion_state": RAMInsertionStateTrainConfig,
    "usb_pickup_insertion_state": USBPickupInsertionStateTrainConfig,
    "object_handover_state": ObjectHandoverStateTrainConfig,
}
