"""Training, as the library sees it: the options it passes (`TrainOptions`, `TrainConfig`, `load_config`) and the one
seam through which the CLI and the `run` pipeline reach a training package (`Training`, found by `training()` through
the entry point group `trace_envs.training`). Nothing here imports torch or the training package."""

from trace_envs.training.config import TrainConfig, TrainOptions, load_config
from trace_envs.training.seam import (
    ENTRY_POINT_GROUP,
    Hardware,
    LoadedModel,
    Training,
    TrainingUnavailable,
    TrainResult,
    training,
)

__all__ = [
    "ENTRY_POINT_GROUP", "Hardware", "LoadedModel", "TrainConfig", "TrainOptions", "TrainResult", "Training",
    "TrainingUnavailable", "load_config", "training",
]
