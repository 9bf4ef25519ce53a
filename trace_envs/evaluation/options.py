"""The evaluation options: how a model-backed policy samples (`PolicyOptions`) and which seeds an evaluation plays
(`EvalOptions`), each knob with its one default and range check. `trace-envs eval` and `calibrate` map their flags onto
them; `trace-envs run` holds `EvalOptions` in its `RunConfig`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from trace_envs.evaluation.results import EVAL_SEED_OFFSET


class PolicyOptions(BaseModel):
    """How a model-backed policy (`hf:`, `routed:`, `openai:`) samples; scripted policies ignore these."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0.0, description="Sampling temperature (0: greedy).")
    max_new_tokens: int | None = Field(
        default=None, ge=1, description="Token budget of one model reply (None: the policy kind's own, 256 for hf: "
                                        "and routed:, 512 for openai:).")
    chat_template: str | None = Field(
        default=None, description="Replace the model's chat template (a TRL template name such as qwen2_5, or a "
                                  ".jinja file).")
    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL of an openai: policy "
                                                           "(None: OPENAI_BASE_URL).")
    batch_size: int = Field(default=16, ge=1, description="Episodes a Hugging Face model plays in lockstep.")
    routing: Literal["lexical", "model", "retrieval", "arrow"] = Field(
        default="lexical", description="How a routed: policy picks adapters: lexical (naive Bayes, no model), model "
        "(the base model scores labelled options), retrieval (nearest mined runs, the base model scoring what they "
        "lacked, a weighted merge of the kept adapters) or arrow (PEFT's Arrow, token-level routing over every "
        "adapter).")


class EvalOptions(PolicyOptions):
    """An evaluation: `episodes` consecutive fixed seeds from `seed_offset`, `samples` rollouts each, and how a model
    policy samples."""

    episodes: int = Field(default=50, ge=1, description="Fixed seeds (consecutive, from seed_offset).")
    samples: int = Field(default=1, ge=1, description="Rollouts per seed (pass@k needs k).")
    seed_offset: int = Field(default=EVAL_SEED_OFFSET, ge=0, description="The first seed; the default is the held-out "
                                                                         "range that training never draws from.")
    max_turns: int | None = Field(
        default=None, ge=1, description="Assistant turns per episode of a model policy (None: the env's max_turns); "
                                        "a looping model then costs less to evaluate.")
