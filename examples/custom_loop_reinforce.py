"""A training loop that is not TRL: plain REINFORCE over `gym.make("trace/<name>")` with a Hugging Face causal LM.

The env is used exactly as any Gymnasium env: `reset(seed)`, then `step(text)` until the episode ends; the model
sees `info["messages"]` and `info["tools"]` through its chat template and answers with a tool call or a message. Each
iteration samples a group of episodes from one seed. With terminal rewards (the default) the update is the policy
gradient of the episode reward minus the group mean, for every action of the episode (so a group with equal rewards
gives no gradient, as in GRPO).

With `--per-turn` the env is made with `reward_mode="per_turn"`: each step pays the change of the check's score it
caused, and each action is credited with its reward-to-go (the rewards from its step to the end: what it and the
actions after it earned, not what came before it) minus the group's mean reward-to-go at the same step; a step that
undid a clause (a write after the user declined) carries the loss. An episode's rewards add up to its terminal reward,
so the logged returns are those of terminal mode.

    python examples/custom_loop_reinforce.py --env trace/airline_check_cabin_before_cancel --model tiny --iterations 2
    python examples/custom_loop_reinforce.py --model tiny --iterations 2 --per-turn
    python examples/custom_loop_reinforce.py --model smollm2 --iterations 50 --group 4     # after `make model`
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gymnasium as gym
import torch

import trace_envs  # noqa: F401  (registers trace/<name>)
from adapters_train.models import resolve_model


def act(model, tokenizer, messages, tools, max_new_tokens: int) -> tuple[str, torch.Tensor]:
    """Sample one action; return its text and the sum of the log-probabilities of its tokens (with gradient)."""
    prompt = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(
            ids, max_new_tokens=max_new_tokens, do_sample=True, temperature=1.0,
            pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
        )
    new = out[:, ids.shape[1]:]
    logits = model(out).logits[:, ids.shape[1] - 1 : -1]
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, new.unsqueeze(-1)).sum()
    return tokenizer.decode(new[0], skip_special_tokens=True), logp


def episode(env, model, tokenizer, seed: int, max_turns: int, max_new_tokens: int) -> tuple[list[float], list[torch.Tensor]]:
    """One episode: each step's reward and the log-probability of its action."""
    _, info = env.reset(seed=seed)
    rewards, logps = [], []
    for _ in range(max_turns):
        text, logp = act(model, tokenizer, info["messages"], info["tools"], max_new_tokens)
        _, reward, terminated, truncated, info = env.step(text or "...")
        rewards.append(float(reward))
        logps.append(logp)
        if terminated or truncated:
            return rewards, logps
    # not ended: the last action gets what the episode would score now, less what was paid
    rewards[-1] += env.unwrapped.score().score - sum(rewards)
    return rewards, logps


def rewards_to_go(rewards: list[float]) -> list[float]:
    """For each step, the sum of the rewards from it to the end of the episode (undiscounted)."""
    out, total = [], 0.0
    for r in reversed(rewards):
        total += r
        out.append(total)
    return out[::-1]


def advantages(episodes: list[list[float]], per_turn: bool) -> list[list[float]]:
    """Each step's advantage. Terminal: the episode's return minus the group's mean return, at every step. Per turn:
    the step's reward-to-go minus the group's mean reward-to-go at the same step index (0 for an episode already
    over): a baseline that does not depend on the step's own action."""
    if not per_turn:
        returns = [sum(rewards) for rewards in episodes]
        baseline = sum(returns) / len(returns)
        return [[r - baseline] * len(rewards) for r, rewards in zip(returns, episodes)]
    to_go = [rewards_to_go(rewards) for rewards in episodes]
    longest = max(len(g) for g in to_go)
    baseline = [sum(g[t] if t < len(g) else 0.0 for g in to_go) / len(to_go) for t in range(longest)]
    return [[g - baseline[t] for t, g in enumerate(gs)] for gs in to_go]


def train(env_id: str, model_name: str, iterations: int, group: int, lr: float, max_turns: int, max_new_tokens: int,
          per_turn: bool = False) -> list[float]:
    loaded = resolve_model(model_name)
    model, tokenizer = loaded.model, loaded.tokenizer
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    env = gym.make(env_id, max_turns=max_turns, reward_mode="per_turn" if per_turn else "terminal")
    history = []
    for it in range(iterations):
        results = [episode(env, model, tokenizer, seed=it, max_turns=max_turns, max_new_tokens=max_new_tokens) for _ in range(group)]
        per_step = advantages([rewards for rewards, _ in results], per_turn)
        loss = -sum(a * logp for adv, (_, logps) in zip(per_step, results) for a, logp in zip(adv, logps)) / group
        optimizer.zero_grad()
        if any(a != 0 for adv in per_step for a in adv):  # nothing above or below the baseline: no signal, no update
            loss.backward()
            optimizer.step()
        returns = torch.tensor([sum(rewards) for rewards, _ in results])
        history.append(float(returns.mean()))
        print(f"iteration {it}: mean reward {returns.mean():.3f}  rewards {returns.tolist()}"
              + (f"  per step {[[round(r, 3) for r in rewards] for rewards, _ in results]}" if per_turn else ""),
              flush=True)
    return history


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", default="trace/airline_check_cabin_before_cancel")
    ap.add_argument("--model", default="tiny", help="tiny, smollm2, a local path or a hub id")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--group", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--max-turns", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--per-turn", action="store_true",
                    help="per-turn rewards (reward_mode=\"per_turn\"), each action credited with its reward-to-go")
    a = ap.parse_args()
    train(a.env, a.model, a.iterations, a.group, a.lr, a.max_turns, a.max_new_tokens, per_turn=a.per_turn)


if __name__ == "__main__":
    main()
