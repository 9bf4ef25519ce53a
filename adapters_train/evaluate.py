"""Evaluation of a policy on an env: success rate, mean reward, per-clause breakdown and pass@k on fixed seeds.

Policies:
- `scripted:oracle|random|passive` act on the Gymnasium env itself (`env.step(action)`): the oracle replays the
  scenario's oracle actions, random makes type-correct random tool calls and random remarks, passive only talks;
- `hf:MODEL[+ADAPTER]` (MODEL: a path, a hub id, `tiny` or `smollm2`) and `openai:MODEL` (any OpenAI-compatible
  server: --base-url / OPENAI_BASE_URL) are chat models and act through the TRL bridge, exactly as during GRPO
  training: tools (plus `send_message_to_user`) are offered, tool calls run until a reply without one ends the episode.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from adapters_train.config import EVAL_SEED_OFFSET


# ---- results -----------------------------------------------------------------------------------------------------------
@dataclass
class EpisodeResult:
    seed: int
    sample: int
    reward: float
    passed: bool
    breakdown: dict[str, float] = field(default_factory=dict)
    turns: int = 0
    adapter: str | None = None  # for a routed policy: the adapter the router chose ("none": the base model)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c successes (Chen et al., 2021)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def group_by_seed(results: Iterable[EpisodeResult]) -> dict[int, list[EpisodeResult]]:
    groups: dict[int, list[EpisodeResult]] = {}
    for r in results:
        groups.setdefault(r.seed, []).append(r)
    return groups


def pass_at_ks(results: Sequence[EpisodeResult], ks: Iterable[int]) -> dict[str, float]:
    groups = group_by_seed(results)
    n = min(len(g) for g in groups.values()) if groups else 0
    out = {}
    for k in ks:
        if 1 <= k <= n:
            vals = [pass_at_k(len(g), sum(r.passed for r in g), k) for g in groups.values()]
            out[f"pass@{k}"] = sum(vals) / len(vals)
    return out


@dataclass
class EvalReport:
    env_id: str
    policy: str
    episodes: int
    samples: int
    seed_offset: int
    success_rate: float
    mean_reward: float
    clauses: dict[str, float]
    pass_at: dict[str, float]
    results: list[EpisodeResult]

    def to_dict(self, with_results: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not with_results:
            d.pop("results")
        routed = [r for r in self.results if r.adapter is not None]
        if routed:
            d["adapters"] = {str(r.seed): r.adapter for r in routed}
        return d

    def format(self) -> str:
        lines = [
            f"env: {self.env_id}",
            f"policy: {self.policy}",
            f"episodes: {self.episodes} seeds x {self.samples} samples (seeds {self.seed_offset}..{self.seed_offset + self.episodes - 1})",
            f"success_rate: {self.success_rate:.3f}",
            f"mean_reward: {self.mean_reward:.3f}",
        ]
        lines += [f"clause {k}: {v:.3f}" for k, v in self.clauses.items()]
        lines += [f"{k}: {v:.3f}" for k, v in self.pass_at.items()]
        routed = [r for r in self.results if r.adapter is not None]
        if routed:
            lines.append("adapters used: " + ", ".join(f"{a} x{n}" for a, n in Counter(r.adapter for r in routed).items()))
            lines += [f"  seed {r.seed}: {r.adapter} (reward {r.reward:.3f})" for r in routed]
        return "\n".join(lines)


def summarize(env_id: str, policy: str, results: list[EpisodeResult], episodes: int, samples: int, seed_offset: int) -> EvalReport:
    n = max(len(results), 1)
    clause_names: list[str] = []
    for r in results:
        clause_names += [c for c in r.breakdown if c not in clause_names]
    clauses = {c: sum(r.breakdown.get(c, 0.0) for r in results) / n for c in clause_names}
    ks = [k for k in (1, 2, 4, 8, 16) if k <= samples] or [1]
    return EvalReport(
        env_id=env_id,
        policy=policy,
        episodes=episodes,
        samples=samples,
        seed_offset=seed_offset,
        success_rate=sum(r.passed for r in results) / n,
        mean_reward=sum(r.reward for r in results) / n,
        clauses=clauses,
        pass_at=pass_at_ks(results, ks),
        results=results,
    )


# ---- scripted policies (act on the gym env) ---------------------------------------------------------------------------
class ScriptedPolicy:
    """The env's oracle, or the random and passive baselines that validate every generated env
    (`trace_envs.generate.policies`): the same policies `trace-envs check` uses."""

    kinds = ("oracle", "random", "passive")

    def __init__(self, kind: str):
        if kind not in self.kinds:
            raise ValueError(f"scripted policy must be one of {', '.join(self.kinds)}, got {kind!r}")
        self.kind = kind

    @property
    def name(self) -> str:
        return f"scripted:{self.kind}"

    def episode(self, env_id: str, seed: int, sample: int) -> EpisodeResult:
        import gymnasium as gym

        from trace_envs.generate.policies import passive_action, random_action, run_policy, run_scripted

        env = gym.make(env_id)
        base = env.unwrapped
        if self.kind == "oracle":
            score, info = run_scripted(base, "oracle", seed)
        else:
            policy = random_action if self.kind == "random" else passive_action
            score, info = run_policy(base, policy, seed, sample=sample)
        env.close()
        return EpisodeResult(seed, sample, float(score), bool(info.get("success")), dict(info.get("reward_breakdown", {})),
                             int(info.get("turn", 0)))

    def rollouts(self, env_id: str, seeds: Sequence[int], samples: int = 1, **_: Any) -> list[EpisodeResult]:
        return [self.episode(env_id, s, j) for s in seeds for j in range(samples)]


# ---- chat policies (act through the TRL bridge) ---------------------------------------------------------------------------
class ChatPolicy:
    name = "chat"
    batch_size = 16

    def respond(self, conversations: list[list[dict[str, Any]]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def rollouts(self, env_id: str, seeds: Sequence[int], samples: int = 1, max_turns: int | None = None,
                 progress: bool = False) -> list[EpisodeResult]:
        """Run (seed, sample) episodes in lockstep batches through the bridge."""
        import trace_envs  # noqa: F401
        from trace_envs.integrations.trl import bridge_class, bridge_tool_schemas, bridge_tools, prompt_row

        cls = bridge_class(env_id)
        jobs = [(s, j) for s in seeds for j in range(samples)]
        out: list[EpisodeResult] = []
        for start in range(0, len(jobs), self.batch_size):
            chunk = jobs[start : start + self.batch_size]
            insts = [cls() for _ in chunk]
            convs = [list(prompt_row(inst, seed)["prompt"]) for inst, (seed, _) in zip(insts, chunk)]
            schemas = bridge_tool_schemas(insts[0])
            limit = max_turns or int(getattr(insts[0].base, "max_turns", 16))
            active = list(range(len(chunk)))
            turns = [0] * len(chunk)
            while active:
                replies = self.respond([convs[i] for i in active], schemas)
                still = []
                for i, msg in zip(active, replies):
                    convs[i].append(msg)
                    turns[i] += 1
                    calls = msg.get("tool_calls") or []
                    if not calls:
                        continue
                    tools = bridge_tools(insts[i])
                    for call in calls:
                        fn = call.get("function", call)
                        name, args = fn.get("name", ""), fn.get("arguments", {})
                        if isinstance(args, str):
                            try:
                                args = json.loads(args)
                            except ValueError:
                                args = None
                        if name not in tools:
                            result = json.dumps({"error": f"unknown tool {name!r}"})
                        elif not isinstance(args, dict):
                            result = json.dumps({"error": "arguments must be a JSON object"})
                        else:
                            result = tools[name](**args)
                        convs[i].append({"role": "tool", "name": name, "content": str(result),
                                         **({"tool_call_id": call["id"]} if call.get("id") else {})})
                    if turns[i] < limit:
                        still.append(i)
                active = still
            for inst, (seed, j), t in zip(insts, chunk, turns):
                res = inst._score()
                out.append(EpisodeResult(seed, j, float(res.score), bool(res.passed), dict(res.breakdown), t))
            if progress:
                print(f"[eval] {len(out)}/{len(jobs)} episodes", file=sys.stderr, flush=True)
        return out


class HFPolicy(ChatPolicy):
    """A transformers causal LM (optionally with a PEFT adapter), prompted with TRL's chat template and parser."""

    def __init__(self, spec: str, *, temperature: float = 0.0, max_new_tokens: int = 256, chat_template: str | None = None,
                 loaded: Any = None, batch_size: int = 16, seed: int = 0):
        from adapters_train.models import load_policy_model

        self.spec = spec
        self.loaded = loaded or load_policy_model(spec, chat_template=chat_template)
        self.temperature = temperature
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.seed = seed
        self.name = f"hf:{spec}"

    def respond(self, conversations: list[list[dict[str, Any]]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        import torch
        from trl.chat_template_utils import parse_response

        tok, model = self.loaded.tokenizer, self.loaded.model
        prompts = [
            tok.apply_chat_template(c, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False)
            for c in conversations
        ]
        width = max(len(p) for p in prompts)
        pad = tok.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompts])
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "pad_token_id": pad,
                                  "eos_token_id": tok.eos_token_id}
        if self.temperature > 0:
            kwargs.update(do_sample=True, temperature=self.temperature, top_k=0, top_p=1.0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.no_grad():
            gen = model.generate(input_ids=input_ids, attention_mask=attention, **kwargs)
        out = []
        for p, row in zip(prompts, gen[:, width:].tolist()):
            ids = []
            for t in row:
                ids.append(t)
                if t == tok.eos_token_id:
                    break
            ids = [t for t in ids if t != pad or t == tok.eos_token_id]
            msg = parse_response(tok, ids, prefix=list(p), tools=tools) if ids else {"role": "assistant", "content": ""}
            out.append({"role": "assistant", "content": msg.get("content") or "",
                        **({"tool_calls": msg["tool_calls"]} if msg.get("tool_calls") else {})})
        return out


class RoutedPolicy(HFPolicy):
    """`routed:BASE+ADAPTERS_DIR`: one PEFT model holding every adapter in ADAPTERS_DIR (each loaded under its
    capability's name); per episode the router reads the task's opening and switches to its choice, or to the base
    model when it answers none."""

    def __init__(self, spec: str, **opts: Any):
        from peft import PeftModel

        from adapters_train.models import resolve_model
        from trace_envs.routing import load_index

        base, sep, adapters_dir = spec.partition("+")
        if not sep or not adapters_dir:
            raise ValueError(f"routed policy needs routed:BASE+ADAPTERS_DIR, got routed:{spec}")
        index = load_index(adapters_dir)
        loaded = resolve_model(base, chat_template=opts.get("chat_template"))
        model = loaded.model
        self.available: list[str] = []
        for cand in index.candidates:
            if not cand.adapter or not (Path(cand.adapter) / "adapter_config.json").is_file():
                continue
            if isinstance(model, PeftModel):
                model.load_adapter(cand.adapter, adapter_name=cand.name)
            else:
                model = PeftModel.from_pretrained(model, cand.adapter, adapter_name=cand.name)
            self.available.append(cand.name)
        if not self.available:
            raise ValueError(f"{adapters_dir}: no trained adapter among {[c.name for c in index.candidates]}")
        loaded.model = model.eval()
        self.router = index.router()
        super().__init__(spec, loaded=loaded, **{k: v for k, v in opts.items() if k != "chat_template"})
        self.name = f"routed:{spec}"

    def choose(self, opening: str) -> str | None:
        choice = self.router.route(opening).choice
        return choice if choice in self.available else None

    def rollouts(self, env_id: str, seeds: Sequence[int], samples: int = 1, max_turns: int | None = None,
                 progress: bool = False) -> list[EpisodeResult]:
        import trace_envs  # noqa: F401
        from trace_envs.integrations.trl import bridge_class, prompt_row

        cls = bridge_class(env_id)
        by_choice: dict[str | None, list[int]] = {}
        for seed in seeds:
            prompt = prompt_row(cls(), seed)["prompt"]
            opening = "\n".join(str(m.get("content") or "") for m in prompt if m.get("role") in ("system", "user"))
            by_choice.setdefault(self.choose(opening), []).append(seed)
        out: list[EpisodeResult] = []
        model = self.loaded.model
        for choice, group in by_choice.items():
            if choice is None:
                with model.disable_adapter():
                    results = super().rollouts(env_id, group, samples, max_turns, progress)
            else:
                model.set_adapter(choice)
                results = super().rollouts(env_id, group, samples, max_turns, progress)
            for r in results:
                r.adapter = choice or "none"
            out += results
        return sorted(out, key=lambda r: (r.seed, r.sample))


class OpenAIPolicy(ChatPolicy):
    """A model behind an OpenAI-compatible chat completions endpoint, called with native tool calling."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 512, max_retries: int = 4, timeout_s: float = 120.0):
        """`max_retries` / `timeout_s`: the SDK's own retries (timeouts, dropped connections, 408 / 429 / 5xx, with
        backoff and Retry-After) and per-request timeout."""
        from openai import OpenAI

        self.client = OpenAI(base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                             api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
                             max_retries=max_retries, timeout=timeout_s)
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.batch_size = 1
        self.name = f"openai:{model}"

    @staticmethod
    def _to_openai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out, pending = [], []
        for m in messages:
            m = dict(m)
            if m.get("role") == "assistant" and m.get("tool_calls"):
                calls = []
                for n, c in enumerate(m["tool_calls"]):
                    fn = c.get("function", c)
                    cid = c.get("id") or f"call_{len(out)}_{n}"
                    args = fn.get("arguments", {})
                    calls.append({"id": cid, "type": "function", "function": {
                        "name": fn.get("name", ""), "arguments": args if isinstance(args, str) else json.dumps(args)}})
                    pending.append(cid)
                m["tool_calls"] = calls
                m["content"] = m.get("content") or None
            elif m.get("role") == "tool":
                m["tool_call_id"] = m.get("tool_call_id") or (pending.pop(0) if pending else "call_0")
                m.pop("name", None)
            out.append(m)
        return out

    def respond(self, conversations: list[list[dict[str, Any]]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        schemas = [{"type": "function", "function": {k: v for k, v in t["function"].items() if k != "return"}} for t in tools]
        out = []
        for conv in conversations:
            resp = self.client.chat.completions.create(
                model=self.model, messages=self._to_openai(conv), tools=schemas, temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
            msg = resp.choices[0].message
            calls = [{"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                                     "arguments": c.function.arguments}}
                     for c in (msg.tool_calls or [])]
            out.append({"role": "assistant", "content": msg.content or "", **({"tool_calls": calls} if calls else {})})
        return out


# ---- entry points ---------------------------------------------------------------------------------------------------------
def parse_policy(spec: str, **opts: Any) -> Any:
    """`scripted:oracle|random|passive`, `hf:MODEL[+ADAPTER]`, `routed:BASE+ADAPTERS_DIR`, `openai:MODEL`."""
    kind, _, rest = spec.partition(":")
    if kind == "scripted":
        return ScriptedPolicy(rest)
    if kind == "hf" and rest:
        return HFPolicy(rest, temperature=opts.get("temperature", 0.0), max_new_tokens=opts.get("max_new_tokens", 256),
                        chat_template=opts.get("chat_template"), batch_size=opts.get("batch_size", 16))
    if kind == "routed" and rest:
        return RoutedPolicy(rest, temperature=opts.get("temperature", 0.0), max_new_tokens=opts.get("max_new_tokens", 256),
                            chat_template=opts.get("chat_template"), batch_size=opts.get("batch_size", 16))
    if kind == "openai" and rest:
        return OpenAIPolicy(rest, base_url=opts.get("base_url"), temperature=opts.get("temperature", 0.0),
                            max_tokens=opts.get("max_new_tokens") or 512)
    raise ValueError(
        f"unknown policy {spec!r}: use scripted:oracle|random|passive, hf:MODEL[+ADAPTER], routed:BASE+ADAPTERS_DIR "
        "or openai:MODEL"
    )


def evaluate(env_id: str, policy: Any, episodes: int = 50, *, samples: int = 1, seed_offset: int = EVAL_SEED_OFFSET,
             progress: bool = False, **opts: Any) -> EvalReport:
    """Run `episodes` fixed seeds (`seed_offset`, ...) x `samples` rollouts and summarize."""
    import trace_envs  # noqa: F401

    pol = parse_policy(policy, **opts) if isinstance(policy, str) else policy
    seeds = list(range(seed_offset, seed_offset + episodes))
    kwargs = {"progress": progress} if isinstance(pol, ChatPolicy) else {}
    results = pol.rollouts(env_id, seeds, samples, **kwargs)
    return summarize(env_id, pol.name, results, episodes, samples, seed_offset)


# ---- scripted completions for GRPO runs (tests, benchmarks) --------------------------------------------------------------
class OracleScript:
    """Completions for a scripted GRPO run in the bridge's ChatML form: on the first turn every `junk_every`-th rollout
    answers junk (a plain message, which ends it with reward 0); the others play the env's oracle conversation turn by
    turn (`oracle_conversation`), so rewards differ inside each group. `script(prompt_text, index) -> completion`."""

    def __init__(self, env_id: str, seeds: Iterable[int], *, junk_every: int = 2, eos: str = "<|im_end|>",
                 junk: str = "Sorry, I cannot help with that."):
        from trace_envs.integrations.trl import bridge_class, oracle_conversation

        cls = bridge_class(env_id)
        # Several seeds may share an opening (e.g. the user gives the id only when asked): keep every episode and
        # tell them apart by the tool results already in the prompt.
        self.plans: list[tuple[str, list[dict[str, Any]], list[str]]] = []
        for seed in seeds:
            conv = oracle_conversation(env_id, int(seed), factory=cls)
            msgs = conv["messages"]
            results = [m["content"] for m in msgs if m["role"] == "tool"]
            self.plans.append((msgs[1]["content"], [m for m in msgs if m["role"] == "assistant"], results))
        self.junk_every = junk_every
        self.eos = eos
        self.junk = junk

    @staticmethod
    def render(msg: dict[str, Any]) -> str:
        if msg.get("tool_calls"):
            return "\n".join(
                "<tool_call>\n" + json.dumps({"name": c["function"]["name"], "arguments": c["function"]["arguments"]})
                + "\n</tool_call>"
                for c in msg["tool_calls"]
            )
        return str(msg.get("content") or "")

    def __call__(self, prompt_text: str, index: int) -> str:
        turn = prompt_text.count("<|im_start|>assistant") - 1
        cands = [p for p in self.plans if p[0] in prompt_text]
        if not cands:
            return self.junk + self.eos
        best = max(len(p[0]) for p in cands)
        cands = [p for p in cands if len(p[0]) == best]
        plan = max(cands, key=lambda p: sum(r in prompt_text for r in p[2]))[1]
        if turn <= 0 and self.junk_every and index % self.junk_every == self.junk_every - 1:
            return self.junk + self.eos
        msg = plan[min(max(turn, 0), len(plan) - 1)]
        return self.render(msg) + self.eos
