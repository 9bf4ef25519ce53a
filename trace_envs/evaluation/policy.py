"""The one reading of a policy named as text, and the one place a policy is built from it.

    scripted:oracle|random|passive   the env's oracle or a baseline (no model; built here)
    hf:MODEL[+ADAPTER]               a transformers model, optionally with a PEFT adapter (MODEL: a path, a hub id,
                                     smollm2 or tiny)
    routed:BASE+ADAPTERS_DIR         one model holding every adapter of a folder, switched per episode by the router
    openai:MODEL                     any OpenAI-compatible chat completions endpoint

Model-backed kinds are built by the training package, through `trace_envs.training`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, Sequence

from pydantic import BaseModel, ConfigDict

from trace_envs.evaluation.options import PolicyOptions
from trace_envs.evaluation.results import EpisodeResult
from trace_envs.evaluation.scripted import SCRIPTED_KINDS, ScriptedPolicy

PolicyKind = Literal["scripted", "hf", "routed", "openai"]
FORMS = {
    "scripted": f"scripted:{'|'.join(SCRIPTED_KINDS)}",
    "hf": "hf:MODEL[+ADAPTER]",
    "routed": "routed:BASE+ADAPTERS_DIR",
    "openai": "openai:MODEL",
}


class Policy(Protocol):
    """What `evaluate` runs: a name for the report and a batch of episodes on fixed seeds (a model policy also takes
    `max_turns` and `progress`)."""

    name: str

    def rollouts(self, env_id: str, seeds: Sequence[int], samples: int = 1, **kwargs: Any) -> list[EpisodeResult]: ...


class PolicySpec(BaseModel):
    """A policy named as text, read: its kind and what follows the colon."""

    model_config = ConfigDict(frozen=True)

    kind: PolicyKind
    target: str

    @property
    def text(self) -> str:
        return f"{self.kind}:{self.target}"

    @property
    def base(self) -> str:
        """The target up to the first `+` (the model, for hf: and routed:)."""
        return self.target.partition("+")[0]

    @property
    def attachment(self) -> str | None:
        """What follows the first `+` (the adapter of hf:, the adapters folder of routed:), or None."""
        return self.target.partition("+")[2] or None


def parse_policy(text: str) -> PolicySpec:
    """Read a policy's text (forms in the module doc); a ValueError that names the valid forms for anything else."""
    kind, sep, target = text.partition(":")
    if not sep or kind not in FORMS:
        raise ValueError(f"unknown policy {text!r}: use {', '.join(list(FORMS.values())[:-1])} or {FORMS['openai']}")
    spec = PolicySpec(kind=kind, target=target)
    if kind == "scripted" and target not in SCRIPTED_KINDS:
        raise ValueError(f"scripted policy must be one of {', '.join(SCRIPTED_KINDS)}, got {target!r}")
    if kind != "scripted" and (not spec.base or (kind == "hf" and "+" in target and not spec.attachment)):
        raise ValueError(f"policy {text!r}: give {FORMS[kind]}")
    if kind == "routed" and not spec.attachment:
        raise ValueError(f"routed policy needs {FORMS['routed']}, got {text}")
    return spec


def build_policy(policy: str | PolicySpec, options: PolicyOptions | None = None) -> Policy:
    """The policy `policy` names: a scripted one here, a model-backed one from the training package (its
    `TrainingUnavailable` says what to install when there is none). `options`: how a model policy samples."""
    spec = parse_policy(policy) if isinstance(policy, str) else policy
    if spec.kind == "scripted":
        return ScriptedPolicy(spec.target)
    from trace_envs.training import training

    return training().model_policy(spec, options or PolicyOptions())
