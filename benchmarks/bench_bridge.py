"""Seconds per GRPO step through the TRL bridge vs the same TRL run with a hand-written environment class for the same
tools and reward (same tiny model, seeds, scripted completions and settings, one process). The bridge's overhead over
a hand-written env should be noise: ratio <= 1.05."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The toy env and the scripted completions are test doubles: they live in tests/ and do not ship in the wheel.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

STEPS = 4
GROUP = 4
ROUNDS = 5
FLOOR = 1.05


class HandRefundEnv:
    """What a user would write by hand for the toy confirm-refund env: same tools, same scenario, same reward."""

    def reset(self, **row: Any) -> None:
        import numpy as np

        rng = np.random.default_rng(int(row["seed"]))
        ids = [f"#W{int(x)}" for x in rng.choice(np.arange(1000, 9999), size=3, replace=False)]
        self.target = ids[0]
        self.orders = {oid: {"order_id": oid, "status": "delivered", "price": float(rng.integers(10, 300))} for oid in ids}
        self.looked_up: set[str] = set()
        self.asked = self.agreed = False
        self.refunds: list[tuple[str, bool, bool]] = []
        return None

    def get_order_details(self, order_id: str) -> str:
        """Get the details of an order.

        Args:
            order_id: The order id, such as '#W1234'.

        Returns:
            The tool's result as JSON text, or a JSON error object.
        """
        import json

        if order_id not in self.orders:
            return json.dumps({"error": f"order {order_id!r} not found"})
        self.looked_up.add(order_id)
        return json.dumps(self.orders[order_id])

    def refund_order(self, order_id: str, reason: str, amount: float | None = None) -> str:
        """Refund a delivered order.

        Args:
            order_id: The order id.
            reason: Why. (choices: ["damaged", "late", "other"])
            amount: Amount to refund; the full price by default.

        Returns:
            The tool's result as JSON text, or a JSON error object.
        """
        import json

        self.refunds.append((order_id, order_id in self.looked_up, self.asked and self.agreed))
        self.asked = self.agreed = False
        if order_id not in self.orders:
            return json.dumps({"error": f"order {order_id!r} not found"})
        self.orders[order_id]["status"] = "refunded"
        return json.dumps({"status": "refunded", "order_id": order_id})

    def send_message_to_user(self, message: str) -> str:
        """Send a message to the user (to ask a question, ask for confirmation, or tell them a result) and get their reply.

        Args:
            message: The text to send to the user.

        Returns:
            The user's reply.
        """
        if "confirm" in message.lower() or "proceed" in message.lower():
            self.asked, self.agreed = True, True
            return "Yes, please go ahead."
        return "Thank you, that's all I needed."

    def get_reward(self) -> float:
        hits = [r for r in self.refunds if r[0] == self.target]
        if not hits:
            return 0.0
        return (1.0 + float(hits[0][1]) + float(self.refunds[0][2])) / 3.0


def _time_run(factory: Any, dataset: Any, script: Any, steps: int = STEPS) -> float:
    from _doubles import scripted_trainer_class
    from peft import LoraConfig
    from trl import GRPOConfig

    from adapters_train.models import build_tiny

    loaded = build_tiny()
    with tempfile.TemporaryDirectory() as tmp:
        args = GRPOConfig(output_dir=tmp, max_steps=steps, num_generations=GROUP, per_device_train_batch_size=GROUP,
                          learning_rate=1e-3, max_completion_length=1024, logging_steps=1, save_strategy="no",
                          report_to="none", seed=0, disable_tqdm=True, log_level="error", bf16=False)
        trainer = scripted_trainer_class(script)(
            model=loaded.model, args=args, train_dataset=dataset, processing_class=loaded.tokenizer,
            peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"),
            environment_factory=factory,
        )
        t0 = time.perf_counter()
        trainer.train()
        return (time.perf_counter() - t0) / steps


def run(steps: int = STEPS, rounds: int = ROUNDS, warm_up: bool = True) -> list[str]:
    import contextlib
    import io

    from _doubles import OracleScript, register_toy

    from trace_envs.integrations.trl import bridge_class, build_dataset

    env_id = register_toy()
    seeds = range(steps)
    dataset = build_dataset(env_id, seeds)
    script = OracleScript(env_id, seeds)
    bridge = bridge_class(env_id)
    times: dict[str, list[float]] = {"bridge": [], "hand": []}
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        if warm_up:
            _time_run(HandRefundEnv, dataset, script, steps)  # imports, kernels
        for _ in range(rounds):
            times["bridge"].append(_time_run(bridge, dataset, script, steps))
            times["hand"].append(_time_run(HandRefundEnv, dataset, script, steps))
    # min over interleaved rounds: the least disturbed run of each (the machine is shared; medians drift with load)
    b, h = min(times["bridge"]), min(times["hand"])
    ratio = b / h
    return [
        f"GRPO step (tiny model, group {GROUP}, scripted oracle/junk completions, {steps} steps x {rounds} rounds)",
        f"bridge: {b:.3f} s/step   hand-written env: {h:.3f} s/step",
        f"ratio bridge/hand: {ratio:.3f} (floor {FLOOR}) {'PASS' if ratio <= FLOOR else 'FAIL'}",
    ]


def smoke() -> list[str]:
    """One GRPO step through each env class, no warm-up."""
    return run(steps=1, rounds=1, warm_up=False)


if __name__ == "__main__":
    print("\n".join(run()))
