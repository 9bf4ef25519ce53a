"""What a trainer needs to know about an env before training on it (its capability, family, spec hash, turn limit).

Both the GRPO and the SFT trainers read it; it sits in its own module so neither imports the other for it.
"""

from __future__ import annotations

from typing import Any


def env_info(env_id: str) -> dict[str, Any]:
    """The env's identity for an adapter's card, and its `max_turns`.

    Args:
        env_id: an env id or bare name (Gymnasium's NameNotFound, naming the folders looked in, if unknown).
    """
    import gymnasium as gym

    from trace_envs.registry import resolve_env_id

    env_id = resolve_env_id(env_id)
    env = gym.make(env_id)
    base = env.unwrapped
    cap = base.capability
    info = {
        "env_id": env_id,
        "capability": cap.name,
        "family": cap.family,
        "spec_hash": cap.spec_hash,
        "max_turns": int(getattr(base, "max_turns", 16)),
    }
    env.close()
    return info

