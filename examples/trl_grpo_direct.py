"""Plug a generated env straight into TRL's GRPOTrainer with the bridge, without trace-envs' own training module.

    python examples/trl_grpo_direct.py --env trace/airline_check_cabin_before_cancel --model tiny --steps 1
    python examples/trl_grpo_direct.py --model /path/to/Qwen2.5-0.5B-Instruct --steps 100   # a real run

The dataset rows hold the env's system prompt and the user's opening plus the scenario seed; TRL calls the bridge's
`reset(**row)` before each rollout (so a GRPO group shares one start state), exposes the target's tools (and
`send_message_to_user`) to the model, and uses `get_reward()`, the env's check, as the reward.
"""

from __future__ import annotations

import argparse
import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from peft import LoraConfig
from trl import GRPOConfig, GRPOTrainer

import trace_envs  # noqa: F401
from adapters_train.models import resolve_model
from trace_envs.integrations.trl import build_dataset, make_env_factory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="trace/airline_check_cabin_before_cancel")
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--group", type=int, default=2)
    a = ap.parse_args()
    loaded = resolve_model(a.model)
    with tempfile.TemporaryDirectory() as out:
        trainer = GRPOTrainer(
            model=loaded.model,
            processing_class=loaded.tokenizer,
            args=GRPOConfig(
                output_dir=out, max_steps=a.steps, num_generations=a.group, per_device_train_batch_size=a.group,
                max_completion_length=64, logging_steps=1, report_to="none", use_cpu=True,
            ),
            train_dataset=build_dataset(a.env, range(a.steps * a.group)),
            environment_factory=make_env_factory(a.env),
            peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"),
        )
        trainer.train()
        print("final log:", trainer.state.log_history[-1])


if __name__ == "__main__":
    main()
