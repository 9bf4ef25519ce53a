"""A training loop that is not TRL: plain REINFORCE over `gym.make("trace/<name>")` with a Hugging Face causal LM.

The env is used exactly as any Gymnasium env: `reset(seed)`, then `step(text)` until the episode ends; the model
sees `info["messages"]` and `info["tools"]` through its chat template and answers with a tool call or a message. Each
iteration samples a group of episodes from one seed, and the update is the policy gradient of the episode reward
minus the group mean (so a group with equal rewards gives no gradient, as in GRPO).

    python examples/custom_loop_reinforce.py --env trace/airline_check_cabin_before_cancel --model tiny --iterations 2
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


def episode(env, model, tokenizer, seed: int, max_turns: int, max_new_tokens: int) -> tuple[float, torch.Tensor]:
    _, info = env.reset(seed=seed)
    total_logp = torch.zeros(())
    reward = 0.0
    for _ in range(max_turns):
        text, logp = act(model, tokenizer, info["messages"], info["tools"], max_new_tokens)
        total_logp = total_logp + logp
        _, reward, terminated, truncated, info = env.step(text or "...")
        if terminated or truncated:
            return float(reward), total_logp
    return float(env.unwrapped.score().score), total_logp


def train(env_id: str, model_name: str, iterations: int, group: int, lr: float, max_turns: int, max_new_tokens: int) -> list[float]:
    loaded = resolve_model(model_name)
    model, tokenizer = loaded.model, loaded.tokenizer
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    env = gym.make(env_id, max_turns=max_turns)
    history = []
    for it in range(iterations):
        results = [episode(env, model, tokenizer, seed=it, max_turns=max_turns, max_new_tokens=max_new_tokens) for _ in range(group)]
        rewards = torch.tensor([r for r, _ in results])
        advantages = rewards - rewards.mean()
        loss = -sum(a * logp for a, (_, logp) in zip(advantages, results)) / group
        optimizer.zero_grad()
        if advantages.abs().sum() > 0:  # equal rewards in the group: no signal, no update
            loss.backward()
            optimizer.step()
        history.append(float(rewards.mean()))
        print(f"iteration {it}: mean reward {rewards.mean():.3f}  rewards {rewards.tolist()}", flush=True)
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
    a = ap.parse_args()
    train(a.env, a.model, a.iterations, a.group, a.lr, a.max_turns, a.max_new_tokens)


if __name__ == "__main__":
    main()
