"""Model-backed policies on an env: Hugging Face models (with or without adapters), routed adapters and any
OpenAI-compatible endpoint, all acting through the TRL bridge exactly as during GRPO training: tools (plus
`send_message_to_user`) are offered, tool calls run until a reply without one ends the episode.

- `hf:MODEL[+ADAPTER]` (MODEL: a path, a hub id, `tiny` or `smollm2`);
- `routed:BASE+ADAPTERS_DIR`: one PEFT model with every adapter, switched per episode by the router;
- `openai:MODEL`: any OpenAI-compatible server (--base-url / OPENAI_BASE_URL).

The policy text is read, and scripted policies built, by `trace_envs.evaluation`; `trace_envs.evaluation.evaluate`
runs every kind and reaches these through the training seam (`model_policy`).
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from trace_envs.evaluation import EpisodeResult, PolicyOptions, PolicySpec, parse_policy


# ---- chat policies (act through the TRL bridge) ---------------------------------------------------------------------------
class ChatPolicy:
    """A chat model's turn function (`respond`) driven through the TRL bridge; subclasses say how it replies."""

    name = "chat"
    batch_size = 16

    def respond(self, conversations: list[list[dict[str, Any]]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def rollouts(self, env_id: str, seeds: Sequence[int], samples: int = 1, max_turns: int | None = None,
                 progress: bool = False, hinted: int = 0) -> list[EpisodeResult]:
        """Run (seed, sample) episodes in lockstep batches through the bridge. `hinted`: the first `hinted` samples
        of every seed see the env's hint and the others do not (a hinted GRPO group); 0 leaves it to the env's
        `knobs.hint_rate`."""
        import trace_envs  # noqa: F401
        from trace_envs.integrations.trl import bridge_class, bridge_tool_schemas, bridge_tools, prompt_row

        cls = bridge_class(env_id)
        jobs = [(s, j) for s in seeds for j in range(samples)]
        out: list[EpisodeResult] = []
        for start in range(0, len(jobs), self.batch_size):
            chunk = jobs[start : start + self.batch_size]
            insts = [cls() for _ in chunk]
            convs = [list(prompt_row(inst, seed, hint=(j < hinted) if hinted else None)["prompt"])
                     for inst, (seed, j) in zip(insts, chunk)]
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
                            result = _call_tool(tools[name], args)
                        convs[i].append({"role": "tool", "name": name, "content": str(result),
                                         **({"tool_call_id": call["id"]} if call.get("id") else {})})
                    # Once the user has ended the conversation the episode is over, as `step` says in the Gym env;
                    # a model that keeps calling tools would otherwise burn every remaining turn of generation.
                    if turns[i] < limit and not insts[i].base.done:
                        still.append(i)
                active = still
            for inst, conv, (seed, j), t in zip(insts, convs, chunk, turns):
                res = inst._score()
                out.append(EpisodeResult(seed, j, float(res.score), bool(res.passed), dict(res.breakdown), t,
                                         reasons=dict(res.reasons), messages=conv,
                                         hinted=bool(getattr(inst.base, "hint_used", False))))
            if progress:
                print(f"[eval] {len(out)}/{len(jobs)} episodes", file=sys.stderr, flush=True)
        return out


def _call_tool(fn: Any, args: dict[str, Any]) -> Any:
    """A bridge tool called with a model's arguments. Arguments the tool does not take (a missing `message`, a
    misspelt name) are the call's error result, as TRL's rollout loop makes them, not the end of the evaluation."""
    try:
        inspect.signature(fn).bind(**args)
    except TypeError as exc:
        return json.dumps({"error": str(exc)})
    return fn(**args)


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
    model when it answers none.

    `route_method`: `lexical` (the index's naive Bayes, the default), `model` (the base model scores labelled
    options), `retrieval` (the paper's router: the nearest mined runs, the base model scoring what they lacked plus
    "base"; the kept adapters are merged once per distinct choice with PEFT's `add_weighted_adapter`, W + sum_c a_c
    B_c A_c) or `arrow` (PEFT's Arrow model over every adapter: token-level top-k routing, no per-task choice)."""

    METHODS = ("lexical", "model", "retrieval", "arrow")

    def __init__(self, spec: str, route_method: str = "lexical", **opts: Any):
        from peft import PeftModel

        from adapters_train.models import resolve_model
        from trace_envs.routing import load_index

        if route_method not in self.METHODS:
            raise ValueError(f"route method must be one of {', '.join(self.METHODS)}, got {route_method!r}")
        parsed = parse_policy(f"routed:{spec}")  # a ValueError unless both BASE and ADAPTERS_DIR are there
        base, adapters_dir = parsed.base, str(parsed.attachment)
        try:
            index = load_index(adapters_dir)
        except FileNotFoundError as exc:  # a mistyped folder is the user's error, said in one line
            raise ValueError(f"routed policy: {exc}; give a folder that `trace-envs train` wrote") from None
        loaded = resolve_model(base, chat_template=opts.get("chat_template"))
        trained = [c for c in index.candidates if c.adapter and (Path(c.adapter) / "adapter_config.json").is_file()]
        if not trained:
            raise ValueError(f"{adapters_dir}: no trained adapter among {[c.name for c in index.candidates]}")
        self.route_method = route_method
        self.available: list[str] = [c.name for c in trained]
        self._merged: dict[tuple[tuple[str, float], ...], str] = {}
        if route_method == "arrow":
            from peft import ArrowConfig, create_arrow_model

            config = ArrowConfig(top_k=min(3, len(trained)), router_temperature=1.0, rng_seed=0)
            model = create_arrow_model(loaded.model, [str(c.adapter) for c in trained], config)
            self.router = None
        else:
            model = loaded.model
            for cand in trained:
                if isinstance(model, PeftModel):
                    model.load_adapter(cand.adapter, adapter_name=cand.name)
                else:
                    model = PeftModel.from_pretrained(model, cand.adapter, adapter_name=cand.name)
            self.router = self._router(index, model, loaded.tokenizer)
        loaded.model = model.eval()
        super().__init__(spec, loaded=loaded, **{k: v for k, v in opts.items() if k != "chat_template"})
        self.name = f"routed:{spec}" + ("" if route_method == "lexical" else f" ({route_method})")

    def _router(self, index: Any, model: Any, tokenizer: Any) -> Any:
        from trace_envs.routing import ModelRouter, RetrievalRouter

        if self.route_method == "lexical":
            return index.router()
        with model.disable_adapter():  # the base model routes (the retrieval router embeds its memory here)
            if self.route_method == "model":
                return ModelRouter(index.candidates, model, tokenizer)
            return RetrievalRouter(index.candidates, model, tokenizer, none_examples=list(index.none_examples))

    def choose(self, opening: str) -> str | None:
        """The adapter the episode plays with (a capability's, a weighted merge of several, Arrow's router) or None
        for the base model."""
        if self.route_method == "arrow":
            return "arrow_router"
        model = self.loaded.model
        if self.route_method == "lexical":
            decision = self.router.route(opening)
        else:
            with model.disable_adapter():
                decision = self.router.route(opening)
        weights = {n: w for n, w in (decision.weights or {}).items() if n in self.available}
        if len(weights) > 1:
            return self._merge(weights)
        return decision.choice if decision.choice in self.available else None

    def _merge(self, weights: dict[str, float]) -> str:
        """One adapter for a weighted choice, built once through PEFT (`cat`: the LoRAs side by side, scaled by
        their weights, which is W + sum_c a_c B_c A_c exactly)."""
        key = tuple(sorted((n, round(w, 2)) for n, w in weights.items()))
        if key not in self._merged:
            name = f"merged_{len(self._merged)}"
            self.loaded.model.add_weighted_adapter([n for n, _ in key], [w for _, w in key], adapter_name=name,
                                                   combination_type="cat")
            self._merged[key] = name
        return self._merged[key]

    def rollouts(self, env_id: str, seeds: Sequence[int], samples: int = 1, max_turns: int | None = None,
                 progress: bool = False, hinted: int = 0) -> list[EpisodeResult]:
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
                    results = super().rollouts(env_id, group, samples, max_turns, progress, hinted)
            else:
                model.set_adapter(choice)
                results = super().rollouts(env_id, group, samples, max_turns, progress, hinted)
            merged = {name: key for key, name in self._merged.items()}
            label = "+".join(f"{n}*{w}" for n, w in merged[choice]) if choice in merged else choice
            for r in results:
                r.adapter = label or "none"
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


# ---- the seam's builder -----------------------------------------------------------------------------------------------
def model_policy(spec: PolicySpec, options: PolicyOptions) -> ChatPolicy:
    """The model-backed policy `spec` names (read by `trace_envs.evaluation.parse_policy`), sampling as `options` say;
    a kind's own token budget (256 for hf: and routed:, 512 for openai:) when `options.max_new_tokens` is None."""
    budget = {"max_new_tokens": options.max_new_tokens} if options.max_new_tokens else {}
    if spec.kind in ("hf", "routed"):
        if spec.kind == "routed":
            budget["route_method"] = options.routing
        cls = HFPolicy if spec.kind == "hf" else RoutedPolicy
        return cls(spec.target, temperature=options.temperature, chat_template=options.chat_template,
                   batch_size=options.batch_size, **budget)
    if spec.kind == "openai":
        return OpenAIPolicy(spec.target, base_url=options.base_url, temperature=options.temperature,
                            **({"max_tokens": options.max_new_tokens} if options.max_new_tokens else {}))
    raise ValueError(f"not a model-backed policy: {spec.text}")
