"""LLM proposer and labeler through the openai and anthropic SDKs (any OpenAI-compatible server via a base URL).

- Prompts are jinja2 templates (templates/prompts/*.md.j2). Reply text is parsed as JSON and validated with pydantic;
  it is never executed.
- An invalid reply is retried with the validation error appended, then dropped with a warning.
- Replies are cached on disk by sha256(provider + model + prompt): a rerun makes no request.
- Token counts come from each reply's `usage`; cost totals from a price table; a thread pool bounds concurrency.
- Transport faults (timeouts, dropped connections, 408 / 409 / 429 / 5xx, Retry-After) are retried by the SDKs
  themselves (`max_retries`, `timeout`); failures are reported per candidate and mining continues with what succeeded.
- The transport is injectable: pass `http_client=` (an httpx Client, e.g. over `httpx.MockTransport`) for tests.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jinja2
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trace_envs.mining.label import Candidate
from trace_envs.mining.llm_cache import ReplyCache, cache_key
from trace_envs.families import all_tasks, get_task
from trace_envs.spec.model import SLUG_PATTERN
from trace_envs.trajectories.models import Run

log = logging.getLogger(__name__)

OPENAI_COMPATIBLE = {"openai", "vllm", "ollama", "openai-compatible", "local", "together", "groq", "deepseek"}
PROVIDERS = OPENAI_COMPATIBLE | {"anthropic"}

# USD per million (input, output) tokens; prefix match on the model name. Unknown models report no cost.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
}


class LLMConfigError(RuntimeError):
    """The LLM is not configured (no key / base URL, unknown provider, SDK missing)."""


class LLMRequestError(RuntimeError):
    """A request failed after its retries."""


def parse_llm_spec(spec: str) -> tuple[str, str]:
    """`PROVIDER:MODEL` -> (provider, model)."""
    provider, sep, model = spec.partition(":")
    provider = provider.strip().lower()
    if not sep or not model.strip():
        raise LLMConfigError(f"--llm takes PROVIDER:MODEL (e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-0), got {spec!r}")
    if provider not in PROVIDERS:
        raise LLMConfigError(f"unknown LLM provider {provider!r}; use one of {sorted(PROVIDERS)}")
    return provider, model.strip()


def check_llm_configured(spec: str, base_url: str | None = None, api_key: str | None = None) -> tuple[str, str]:
    """Fail fast, before any work, when the LLM cannot be reached: no API key and no base URL."""
    provider, model = parse_llm_spec(spec)
    if provider == "anthropic":
        if not (api_key or os.environ.get("ANTHROPIC_API_KEY") or base_url):
            raise LLMConfigError("--llm anthropic:... needs ANTHROPIC_API_KEY in the environment (or --base-url)")
        _import_sdk("anthropic")
    else:
        if not (api_key or os.environ.get("OPENAI_API_KEY") or base_url or os.environ.get("OPENAI_BASE_URL")):
            raise LLMConfigError(
                f"--llm {provider}:... needs OPENAI_API_KEY in the environment, or --base-url for an "
                "OpenAI-compatible server (vLLM, Ollama)"
            )
        _import_sdk("openai")
    return provider, model


def _import_sdk(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError as exc:
        raise LLMConfigError(f"the {name} SDK is not installed: pip install 'trace-envs[llm]'") from exc


def http_module() -> Any:
    """The httpx module the installed SDKs build on (`httpx`, or its `httpx2` fork), for `http_client=` transports."""
    try:
        import openai._base_client as base

        for name in ("httpx2", "httpx"):
            mod = getattr(base, name, None)
            if mod is not None and hasattr(mod, "Client"):
                return mod
    except ImportError:
        pass
    try:
        import httpx

        return httpx
    except ImportError:
        import httpx2  # type: ignore[import-not-found]

        return httpx2


def _accepts(fn: Any, name: str) -> bool:
    """Whether an SDK method takes keyword `name` (SDK versions differ; unknown keywords raise TypeError)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _garbled(exc: BaseException) -> bool:
    """A reply the SDK received with a success status but could not read as a completion (an HTML page from a
    gateway, a body of the wrong shape). Transport faults (timeouts, dropped connections, 408 / 409 / 429 / 5xx,
    Retry-After) never get here: the SDK retries those itself."""
    if isinstance(exc, (json.JSONDecodeError, TypeError, KeyError, IndexError, AttributeError)):
        return True
    return "responsevalidation" in type(exc).__name__.lower()


@dataclass
class Usage:
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    failures: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "failures": list(self.failures),
        }


def price_of(model: str) -> tuple[float, float] | None:
    for prefix in sorted(PRICES, key=len, reverse=True):
        if model.startswith(prefix):
            return PRICES[prefix]
    return None


class LLMClient:
    """One provider + model. `complete(prompt)` returns the reply text (cached, retried, counted). Thread-safe.

    Retries are the SDK's own (`max_retries`, `timeout_s`): timeouts, dropped connections, 408 / 409 / 429 / 5xx, with
    exponential backoff and the server's Retry-After. Our own loop only repeats a request whose success reply cannot
    be read as a completion; replies that do not validate as proposals or labels are the proposer's and labeler's
    business (retried with the error, then dropped)."""

    def __init__(
        self,
        spec: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: Any = None,
        cache_dir: str | Path | None = None,
        use_cache: bool = True,
        max_retries: int = 4,
        timeout_s: float = 60.0,
        max_tokens: int = 2000,
        temperature: float = 0.0,
    ) -> None:
        """`spec`: PROVIDER:MODEL. `base_url`: an OpenAI-compatible server (or Anthropic endpoint); `api_key`: else
        from the environment. `http_client`: an httpx(2) Client to send through (tests pass a MockTransport).
        `cache_dir` / `use_cache`: the on-disk reply cache. `max_retries`: the SDK's retries per request, also the
        bound on re-asking after an unreadable reply; `timeout_s`: per request. `max_tokens`, `temperature`: of the
        reply (default 2000 tokens, greedy)."""
        self.provider, self.model = parse_llm_spec(spec)
        self.base_url = base_url
        self.cache = ReplyCache(cache_dir, enabled=use_cache)
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.usage = Usage(cost_usd=0.0 if price_of(self.model) else None)
        self._lock = threading.Lock()
        name = "anthropic" if self.provider == "anthropic" else "openai"
        sdk = _import_sdk(name)
        env_key = "ANTHROPIC_API_KEY" if name == "anthropic" else "OPENAI_API_KEY"
        key = api_key or os.environ.get(env_key) or ("not-needed" if base_url or http_client else None)
        if not key:
            hint = "(or --base-url)" if name == "anthropic" else "(or --base-url for an OpenAI-compatible server)"
            raise LLMConfigError(f"{name} needs {env_key} {hint}")
        http = http_client if http_client is not None else sdk.DefaultHttpxClient()
        hooks = dict(http.event_hooks)
        hooks["request"] = [*hooks.get("request", []), self._count_request]
        http.event_hooks = hooks
        client_cls = sdk.Anthropic if name == "anthropic" else sdk.OpenAI
        self._client = client_cls(api_key=key, base_url=base_url, http_client=http, max_retries=max_retries,
                                  timeout=timeout_s)

    def _count_request(self, request: Any) -> None:
        """httpx request hook: every HTTP request counts, and those the SDK sends again are its retries."""
        retry = str(request.headers.get("x-stainless-retry-count", "0")).strip()
        with self._lock:
            self.usage.requests += 1
            if retry.isdigit() and int(retry) > 0:
                self.usage.retries += 1

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def _request(self, prompt: str) -> tuple[str, int, int]:
        if self.provider == "anthropic":
            kwargs: dict[str, Any] = {}
            if _accepts(self._client.messages.create, "temperature"):
                kwargs["temperature"] = self.temperature
            msg = self._client.messages.create(
                model=self.model, max_tokens=self.max_tokens, messages=[{"role": "user", "content": prompt}], **kwargs
            )
            text = "".join(getattr(b, "text", "") for b in msg.content)
            u = msg.usage
            return text, int(getattr(u, "input_tokens", 0) or 0), int(getattr(u, "output_tokens", 0) or 0)
        kwargs = {"temperature": self.temperature} if _accepts(self._client.chat.completions.create, "temperature") else {}
        resp = self._client.chat.completions.create(
            model=self.model, max_tokens=self.max_tokens, messages=[{"role": "user", "content": prompt}], **kwargs
        )
        text = resp.choices[0].message.content or ""
        u = resp.usage
        return text, int(getattr(u, "prompt_tokens", 0) or 0), int(getattr(u, "completion_tokens", 0) or 0)

    def complete(self, prompt: str) -> str:
        key = cache_key(self.provider, self.model, prompt, self.base_url)
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.usage.cache_hits += 1
            return hit["text"]
        attempt = 0
        while True:
            try:
                text, tin, tout = self._request(prompt)
                break
            except Exception as exc:
                if not _garbled(exc) or attempt >= self.max_retries:
                    raise LLMRequestError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
                attempt += 1
                with self._lock:
                    self.usage.retries += 1
        with self._lock:
            self.usage.input_tokens += tin
            self.usage.output_tokens += tout
            price = price_of(self.model)
            if price is not None and self.usage.cost_usd is not None:
                self.usage.cost_usd += (tin * price[0] + tout * price[1]) / 1e6
        self.cache.put(key, {"text": text, "input_tokens": tin, "output_tokens": tout, "model": self.name})
        return text


# --------------------------------------------------------------------------------------------------------------------
# prompts and replies


def _templates_dir() -> Path:
    here = Path(__file__).resolve()
    for cand in (here.parents[2] / "templates" / "prompts", here.parents[1] / "_templates" / "prompts"):
        if cand.is_dir():
            return cand
    raise FileNotFoundError("templates/prompts not found")


_ENV: jinja2.Environment | None = None


def render_prompt(template: str, /, **ctx: Any) -> str:
    """Render a prompt template. Prompts are text for a model (no HTML), so autoescape is off; nothing rendered runs."""
    global _ENV
    if _ENV is None:
        _ENV = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(_templates_dir())), autoescape=False, undefined=jinja2.StrictUndefined,
            trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        )
    return _ENV.get_template(template).render(**ctx)


def extract_json(text: str) -> Any:
    """The JSON value in a reply: a ```json fenced block, else the outermost {...}. Parsed with json.loads only."""
    m = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    body = m.group(1) if m else text
    start = body.find("{")
    end = body.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the reply holds no JSON object")
    return json.loads(body[start : end + 1])


class CandidateReply(BaseModel):
    """What the LLM proposes for one capability (converted to a CapabilitySpec with the profile's tools)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SLUG_PATTERN)
    description: str = Field(min_length=10, max_length=2000)
    family: str
    roles: dict[str, str]
    evidence: str = Field(default="", max_length=2000)


class ProposalReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    candidates: list[CandidateReply] = Field(max_length=30)


class LabelReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    label: Literal["PRESENT", "LACKING", "NA"]
    reason: str = Field(default="", max_length=2000)


def _trace_lines(run: Run, limit: int = 40, width: int = 160) -> list[str]:
    """A compact, text-only view of a run for a prompt (the content is data for the model, never code)."""
    calls = {}
    for c in run.agent_calls:
        calls.setdefault(c.message_index, []).append(c)
    out: list[str] = []
    for i, m in enumerate(run.messages):
        role = m.get("role")
        content = m.get("content")
        if role == "user" and isinstance(content, str):
            out.append(f"USER: {content[:width]}")
        elif role == "assistant":
            if isinstance(content, str) and content.strip():
                out.append(f"AGENT: {content[:width]}")
            for c in calls.get(i, []):
                args = json.dumps(c.arguments, ensure_ascii=False)[:width]
                res = (c.result or "")[:80].replace("\n", " ")
                out.append(f"CALL {c.name}({args}) -> {res}")
    if len(out) > limit:
        out = out[: limit // 2] + [f"... ({len(out) - limit} steps left out) ..."] + out[-limit // 2 :]
    return out


def _tools_for_prompt(profile: Any) -> list[dict[str, Any]]:
    return [
        {"name": n, "kind": t.kind, "args": list((t.parameters or {}).get("properties", {}))}
        for n, t in profile.tools.items()
    ]


def _family_roles() -> dict[str, tuple[str, ...]]:
    return {name: task.roles for name, task in all_tasks().items()}


@dataclass
class ProposalOutcome:
    candidates: list[Candidate]
    warnings: list[str]
    failures: list[str]


def _validate_proposal(data: Any, profile: Any) -> tuple[list[CandidateReply], list[str]]:
    """Schema check, then meaning: every role names a known tool (or, for key/arg, an argument)."""
    reply = ProposalReply.model_validate(data)
    good, errors = [], []
    tools = profile.tools
    args = {a for t in tools.values() for a in (t.parameters or {}).get("properties", {})}
    for i, c in enumerate(reply.candidates):
        bad = []
        try:
            get_task(c.family)
        except ValueError as exc:
            bad.append(f"family: {exc}")
        for role, target in c.roles.items():
            if role in ("key", "arg"):
                if target not in args:
                    bad.append(f"roles.{role}={target!r} is no argument of any tool")
            elif target not in tools:
                bad.append(f"roles.{role}={target!r} is no tool of this domain")
        if not any(r not in ("key", "arg") for r in c.roles):
            bad.append("roles name no tool")
        if bad:
            errors.append(f"candidates[{i}] ({c.name}): " + "; ".join(bad))
        else:
            good.append(c)
    return good, errors


def propose_llm(
    client: LLMClient,
    profile: Any,
    pairs: list[tuple[Run, Run]],
    *,
    pairs_per_prompt: int = 4,
    max_attempts: int = 2,
    concurrency: int = 4,
    existing: set[str] | None = None,
    index: Any = None,
) -> ProposalOutcome:
    """Ask the LLM for candidates from contrasting (passed, failed) pairs, batch by batch, in a thread pool.

    `index` (a `trajectories.results.ResultIndex` over the runs) lets family parameters be read off the data."""
    from trace_envs.mining.propose_offline import build_candidate

    batches = [pairs[i : i + pairs_per_prompt] for i in range(0, len(pairs), pairs_per_prompt)] or [[]]
    family_roles = _family_roles()
    warnings: list[str] = []
    failures: list[str] = []

    def one(batch_no: int, batch: list[tuple[Run, Run]]) -> list[CandidateReply]:
        base = render_prompt(
            "propose.md.j2",
            domain=getattr(profile, "domain", "custom"),
            policy=(getattr(profile, "policy", "") or "")[:4000],
            tools=_tools_for_prompt(profile),
            families=family_roles,
            pairs=[
                {"task": p.task_id, "request": p.first_user_message()[:400],
                 "passed": _trace_lines(p), "failed": _trace_lines(f), "passed_id": p.run_id, "failed_id": f.run_id}
                for p, f in batch
            ],
        )
        prompt = base
        last_err = ""
        partial: list[CandidateReply] = []
        for _ in range(max_attempts):
            text = client.complete(prompt)
            try:
                good, errors = _validate_proposal(extract_json(text), profile)
            except (ValueError, ValidationError) as exc:
                last_err = str(exc)[:2000]
                prompt = (f"{base}\n\nYour previous reply was invalid:\n{last_err}\n"
                          "Reply again with only the JSON object described above.")
                continue
            if not errors:
                return good
            partial = good
            last_err = "\n".join(errors)[:2000]
            prompt = (f"{base}\n\nYour previous reply was invalid:\n{last_err}\n"
                      "Reply again with only the JSON object described above.")
        msg = f"proposal batch {batch_no}: reply did not validate after {max_attempts} attempts, dropped: {last_err[:300]}"
        log.warning(msg)
        warnings.append(msg)
        return partial

    results: list[list[CandidateReply]] = [[] for _ in batches]
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {pool.submit(one, i, b): i for i, b in enumerate(batches)}
        for fut, i in futures.items():
            try:
                results[i] = fut.result()
            except Exception as exc:  # request failed after retries: report, keep going
                failures.append(f"proposal batch {i}: {exc}")
    seen = set(existing or ())
    out: list[Candidate] = []
    for batch in results:
        for c in batch:
            if c.name in seen:
                continue
            try:
                cand = build_candidate(profile, c.family, c.roles, name=c.name, description=c.description,
                                       origin=f"llm:{client.name}", index=index)
            except Exception as exc:
                failures.append(f"candidate {c.name}: {type(exc).__name__}: {exc}")
                continue
            seen.add(cand.name)
            out.append(cand)
    return ProposalOutcome(out, warnings, failures)


class LLMLabeler:
    """Labels a (candidate, run) pair with the LLM; an invalid reply is retried once with the error, then NA."""

    def __init__(self, client: LLMClient, max_attempts: int = 2) -> None:
        self.client = client
        self.max_attempts = max_attempts
        self.failures: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, cand: Candidate, run: Run) -> str:
        base = render_prompt(
            "label.md.j2", name=cand.name, description=cand.spec.description, family=cand.spec.family,
            roles=cand.spec.roles, trace=_trace_lines(run, limit=60),
        )
        prompt = base
        err = ""
        for _ in range(self.max_attempts):
            try:
                text = self.client.complete(prompt)
            except Exception as exc:
                err = str(exc)
                break
            try:
                return LabelReply.model_validate(extract_json(text)).label
            except (ValueError, ValidationError) as exc:
                err = str(exc)[:1000]
                prompt = f"{base}\n\nYour previous reply was invalid:\n{err}\nReply again with only the JSON object."
        with self._lock:
            self.failures.setdefault(cand.name, f"run {run.run_id}: {err[:300]}")
        return "NA"

    def label_many(self, cand_runs: list[tuple[int, Candidate, int, Run]], concurrency: int = 4) -> dict[tuple[int, int], str]:
        """Label (candidate index, candidate, run index, run) items in a thread pool -> {(run_i, cand_j): label}."""
        out: dict[tuple[int, int], str] = {}
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            futs = {pool.submit(self, c, r): (ri, cj) for cj, c, ri, r in cand_runs}
            for fut, key in futs.items():
                out[key] = fut.result()
        return out
