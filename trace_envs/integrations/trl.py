"""TRL bridge: a registered `trace/<name>` env as an `environment_factory` for TRL's `GRPOTrainer`.

TRL turns every public method of the environment object into a tool (named after the method, typed from its signature,
described by its Google-style docstring), calls `reset(**row)` with each dataset row before a rollout, and, when the
class defines `get_reward()`, calls it once per finished rollout as a reward source. Its loop runs tools while the model
emits tool calls and ends the rollout at the first assistant message without one: there is no user turn. So:

- `bridge_class(env_id)` builds a plain class (not a `gymnasium.Env`: TRL would expose `step`, `render`, ... as
  tools) whose methods carry the target's tool names, argument names, JSON types and descriptions, built with real
  `inspect.Signature`s and annotations (no exec/eval); each forwards to `TraceEnv.call_tool`;
- it adds one tool, `send_message_to_user(message)`, through which the agent talks to the simulated user (the reply is
  the tool result), so the families that need the user's answer (confirmation, information gathering) are trainable;
- `reset(**row)` seeds the scenario from `row["seed"]` (and `row["hint"]`), so all generations of a GRPO group start
  from the same state; it returns None because `build_dataset` already put the env's system prompt and opening in
  the row's `prompt`;
- `get_reward()` is the check's score in [0, 1] for the episode so far.

Typical use::

    from trl import GRPOConfig, GRPOTrainer
    from trace_envs.integrations.trl import build_dataset, make_env_factory

    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=build_dataset("trace/x", range(64)),
                          environment_factory=make_env_factory("trace/x"))

Several envs in one run: `environment_factory=make_env_factories([...])` and `build_multi_dataset({...})`, whose rows
carry an `environment` column (TRL >= 1.x routes each row to its env and shows only that env's tools).
"""

from __future__ import annotations

import inspect
import json
import keyword
import re
from typing import Any, Callable, Iterable, Literal, Optional

import gymnasium as gym

USER_TOOL = "send_message_to_user"
RESERVED = frozenset({"reset", "get_reward"})
BRIDGE_NOTE = (
    "You talk to the user only through the tool send_message_to_user(message): the user's reply comes back as its "
    "result. Call the other tools with tool calls. A reply that contains no tool call ends the conversation, so reply "
    "without a tool call only once you are done."
)
_ACTION_FORMAT_RE = re.compile(r"To call a tool, reply with only a JSON object.*?Any other reply is a message to the user\.",
                               re.DOTALL)
_STOP = "###STOP###"


# ---- schema -> Python annotations and Google-style docstrings -----------------------------------------------------
_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict}


def schema_annotation(schema: Any) -> Any:
    """A Python type whose `transformers.utils.get_json_schema` rendering matches the JSON schema `schema`."""
    if not isinstance(schema, dict):
        return Any
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, (str, int, float, bool)) for v in enum):
        return Literal[tuple(enum)]  # type: ignore[valid-type]
    kind = schema.get("type")
    if isinstance(kind, list):
        types = [schema_annotation({**schema, "type": k}) for k in kind if k != "null"]
        nullable = "null" in kind
        if not types:
            return type(None)
        ann = types[0]
        for t in types[1:]:
            ann = ann | t
        return Optional[ann] if nullable else ann
    if kind == "array":
        item = schema.get("items")
        return list[schema_annotation(item)] if isinstance(item, dict) and item else list
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "null":
        return type(None)
    return Any


def _one_line(text: Any, limit: int = 1000) -> str:
    text = " ".join(str(text or "").split())
    # Section words would split the docstring in transformers' Google-style parser.
    text = re.sub(r"\b(Args|Arguments|Returns|Raises)\s*:", r"\1 -", text)
    return text[:limit]


def tool_docstring(description: str, args: dict[str, str], returns: str) -> str:
    lines = [_one_line(description) or "Call this tool.", ""]
    if args:
        lines.append("Args:")
        lines += [f"    {name}: {_one_line(desc) or f'The {name} argument.'}" for name, desc in args.items()]
        lines.append("")
    lines += ["Returns:", f"    {_one_line(returns)}"]
    return "\n".join(lines)


def _param_name(arg: str) -> str:
    """Python parameter name for a schema argument (keywords get a trailing underscore)."""
    return f"{arg}_" if keyword.iskeyword(arg) or arg == "self" else arg


def method_name(tool: str) -> str:
    """The Python name a tool goes by on the bridge: `holds.cancel` and `order-cancel` are no identifiers, so their
    dots and dashes become underscores (the call still reaches the tool by its own name)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", tool)


def _make_tool_method(tool: Any) -> Callable[..., str]:
    name = tool.name
    props: dict[str, Any] = dict(tool.properties)
    required = [a for a in tool.required if a in props]
    optional = [a for a in props if a not in required]
    to_arg = {_param_name(a): a for a in props}

    def method(self, **kwargs: Any) -> str:
        args = {to_arg.get(k, k): v for k, v in kwargs.items() if not (v is None and to_arg.get(k, k) in optional)}
        return self._call(name, args)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    docs: dict[str, str] = {}
    for arg in required + optional:
        schema = props[arg] if isinstance(props[arg], dict) else {}
        ann = schema_annotation(schema)
        pname = _param_name(arg)
        if arg in required:
            params.append(inspect.Parameter(pname, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ann))
        else:
            ann = Optional[ann]
            params.append(
                inspect.Parameter(pname, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=ann)
            )
        annotations[pname] = ann
        docs[pname] = schema.get("description") or f"The {arg} argument."
    annotations["return"] = str
    method.__name__ = method_name(name)
    method.__qualname__ = method_name(name)
    method.__doc__ = tool_docstring(
        tool.description or f"Call the {name} tool.", docs, "The tool's result as JSON text, or a JSON error object."
    )
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    return method


def _send_message_to_user(self, message: str) -> str:
    return self._say(message)


_send_message_to_user.__doc__ = tool_docstring(
    "Send a message to the user (to ask a question, ask for confirmation, or tell them a result) and get their reply.",
    {"message": "The text to send to the user."},
    "The user's reply.",
)
_send_message_to_user.__annotations__ = {"message": str, "return": str}
_send_message_to_user.__name__ = USER_TOOL
_send_message_to_user.__qualname__ = USER_TOOL


# ---- the bridge class ------------------------------------------------------------------------------------------------
class TraceBridge:
    """Base of the generated bridge classes. Public functions of a subclass are TRL tools: keep helpers private."""

    env_id: str = ""
    env_kwargs: dict[str, Any] = {}

    def __init__(self) -> None:
        self._env = gym.make(self.env_id, **self.env_kwargs)
        self._base = self._env.unwrapped
        self._row: dict[str, Any] = {}
        self._last_result: Any = None
        self._reset_done = False

    # TRL's contract ---------------------------------------------------------------------------------------------------
    def reset(self, **row: Any) -> None:
        """Start the scenario of a dataset row (same seed, hence same state, for every generation of a group)."""
        seed = row.get("seed")
        options = {"hint": bool(row["hint"])} if row.get("hint") is not None else None
        self._base.reset(seed=None if seed is None else int(seed), options=options)
        self._row = row
        self._last_result = None
        self._reset_done = True
        return None

    # helpers (private: TRL must not see them as tools) --------------------------------------------------------------
    @property
    def base(self) -> Any:
        """The underlying `TraceEnv`."""
        return self._base

    @property
    def last_result(self) -> Any:
        """The `CheckResult` of the last scoring (score, breakdown, passed)."""
        return self._last_result

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if not self._reset_done:
            return json.dumps({"error": "the environment was not reset"})
        return self._base.call_tool(name, arguments)

    def _say(self, message: str) -> str:
        if not self._reset_done:
            return json.dumps({"error": "the environment was not reset"})
        if self._base.done:
            return "[The user has left the conversation.]"
        reply, ended = self._base.say(str(message))
        reply = reply.replace(_STOP, "").strip()
        return f"{reply} [The user has ended the conversation.]" if ended else reply

    def _score(self) -> Any:
        self._last_result = self._base.score()
        return self._last_result


def _get_reward(self) -> float:
    return float(self._score().score)


_get_reward.__doc__ = "The check's score in [0, 1] for the episode so far (TRL calls it once per finished rollout)."


def _class_name(env_id: str) -> str:
    slug = re.sub(r"[^0-9A-Za-z]+", "_", env_id.split("/")[-1]).strip("_") or "env"
    return "Trace_" + slug


def bridge_class(
    env_id: str,
    *,
    user_tool: bool = True,
    owns_reward: bool = True,
    env_kwargs: dict[str, Any] | None = None,
) -> type:
    """Build the bridge class for `env_id` (instances are what TRL's `environment_factory` must return).

    `user_tool`: add `send_message_to_user` (needed by every family whose check looks at the conversation).
    `owns_reward`: define `get_reward` (TRL then adds it as a reward source by itself); with False, score through
    `reward_from_env` in `reward_funcs` instead (e.g. to weight it against other rewards).
    """
    import trace_envs  # noqa: F401  (registers trace/* ids)

    env = gym.make(env_id, **(env_kwargs or {}))
    base = env.unwrapped
    tool_specs = list(base.tool_specs)
    env.close()
    namespace: dict[str, Any] = {"env_id": env_id, "env_kwargs": dict(env_kwargs or {}), "__module__": __name__}
    for tool in tool_specs:
        attr = method_name(tool.name)
        if attr in RESERVED or attr.startswith("_") or (user_tool and attr == USER_TOOL) or attr in namespace:
            raise ValueError(
                f"{env_id}: tool name {tool.name!r} collides with the TRL bridge ({', '.join(sorted(RESERVED))}, "
                f"{USER_TOOL}, a private name TRL would hide, or another tool's method {attr!r})"
            )
        namespace[attr] = _make_tool_method(tool)
    if user_tool:
        namespace[USER_TOOL] = _send_message_to_user
    if owns_reward:
        namespace["get_reward"] = _get_reward
    name = _class_name(env_id)
    cls = type(name, (TraceBridge,), namespace)
    cls.__doc__ = f"TRL environment for {env_id}: tools {', '.join(t.name for t in tool_specs)}."
    return cls


def make_env_factory(env_id: str, **kwargs: Any) -> type:
    """The `environment_factory` for one env: the bridge class itself (calling it builds one instance)."""
    return bridge_class(env_id, **kwargs)


def make_env_factories(env_ids: Iterable[str], **kwargs: Any) -> dict[str, type]:
    """A `{env_id: factory}` mapping for a multi-env run (rows pick theirs through an `environment` column)."""
    return {env_id: bridge_class(env_id, **kwargs) for env_id in env_ids}


def reward_from_env(environments: list[Any] | None = None, **_: Any) -> list[float | None]:
    """A TRL reward function: the check's score of each rollout's environment (None for non-trace envs)."""
    if not environments:
        raise ValueError("reward_from_env needs TRL's `environments` (pass an environment_factory)")
    return [float(e._score().score) if isinstance(e, TraceBridge) else None for e in environments]


def bridge_tools(instance: Any) -> dict[str, Callable[..., Any]]:
    """The tools TRL will expose for `instance`, as it finds them (public functions but reset/get_reward)."""
    return {
        name: getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in RESERVED and not name.startswith("_")
    }


def bridge_tool_schemas(instance: Any) -> list[dict[str, Any]]:
    """OpenAI-style JSON schemas of the bridge's tools, as `apply_chat_template` renders them."""
    from transformers.utils import get_json_schema

    return [get_json_schema(fn) for fn in bridge_tools(instance).values()]


def bridge_system_prompt(system_prompt: str, user_tool: bool = True) -> str:
    """The env's system prompt with its plain-text action format replaced by the bridge protocol."""
    if not user_tool:
        return system_prompt
    replaced, n = _ACTION_FORMAT_RE.subn(BRIDGE_NOTE, system_prompt)
    return replaced if n else f"{system_prompt}\n\n{BRIDGE_NOTE}"


def prompt_row(instance: TraceBridge, seed: int, *, user_tool: bool = True, hint: bool | None = None) -> dict[str, Any]:
    """Reset `instance` at `seed` and return its dataset row (prompt as chat messages, seed, hint flag, env id).

    `hint`: None lets the env's `knobs.hint_rate` decide whether the prompt carries the hint; True / False force it
    (a trainer that hints a share of each group itself builds plain rows)."""
    instance.reset(seed=seed, **({} if hint is None else {"hint": hint}))
    base = instance.base
    return {
        "prompt": [
            {"role": "system", "content": bridge_system_prompt(base.system_prompt, user_tool)},
            {"role": "user", "content": base.opening},
        ],
        "seed": int(seed),
        "hint": bool(getattr(base, "hint_used", False)),
        "env_id": instance.env_id,
    }


def build_rows(env_id: str, seeds: Iterable[int], *, user_tool: bool = True, environment: str | None = None,
               factory: type | None = None, hint: bool | None = None) -> list[dict[str, Any]]:
    cls = factory or bridge_class(env_id, user_tool=user_tool)
    inst = cls()
    rows = []
    for seed in seeds:
        row = prompt_row(inst, int(seed), user_tool=user_tool, hint=hint)
        if environment is not None:
            row["environment"] = environment
        rows.append(row)
    return rows


def build_dataset(env_id: str, seeds: Iterable[int], *, user_tool: bool = True, hint: bool | None = None) -> Any:
    """A `datasets.Dataset` with one row per seed: `prompt` (system + the user's opening), `seed`, `hint`, `env_id`
    (`hint`: see `prompt_row`)."""
    from datasets import Dataset

    return Dataset.from_list(build_rows(env_id, seeds, user_tool=user_tool, hint=hint))


def build_multi_dataset(seeds_by_env: dict[str, Iterable[int]], *, user_tool: bool = True, shuffle_seed: int = 0) -> Any:
    """Rows of several envs, each with an `environment` column naming its factory in `make_env_factories`."""
    from datasets import Dataset

    rows: list[dict[str, Any]] = []
    for env_id, seeds in seeds_by_env.items():
        rows += build_rows(env_id, seeds, user_tool=user_tool, environment=env_id)
    ds = Dataset.from_list(rows)
    return ds.shuffle(seed=shuffle_seed) if shuffle_seed is not None else ds


def oracle_conversation(
    env_id: str, seed: int, *, factory: type | None = None, final_message: str = "Done.", user_tool: bool = True
) -> dict[str, Any]:
    """The env's oracle episode at `seed` replayed through the bridge, in the chat form TRL's loop produces.

    Returns `{"messages", "tools", "reward"}`: messages start with the dataset prompt; each oracle tool call becomes an
    assistant `tool_calls` message plus `tool` results; each oracle message to the user becomes a
    `send_message_to_user` call whose result is the user's reply; a final plain assistant message ends it.
    """
    from trace_envs.runtime import parse_action

    cls = factory or bridge_class(env_id, user_tool=user_tool)
    inst = cls()
    row = prompt_row(inst, seed, user_tool=user_tool)
    tools = bridge_tools(inst)
    messages: list[dict[str, Any]] = [dict(m) for m in row["prompt"]]
    for action in inst.base.oracle_actions():
        parsed = parse_action(action)
        if parsed.error is not None:
            continue
        calls = [(c.name, dict(c.arguments)) for c in parsed.calls]
        content = ""
        if not calls:
            calls = [(USER_TOOL, {"message": parsed.text})]
        elif parsed.text:
            calls = [(USER_TOOL, {"message": parsed.text})] + calls
        messages.append(
            {
                "role": "assistant",
                "content": content,
                "tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls],
            }
        )
        for n, a in calls:
            fn = tools.get(n)
            result = fn(**a) if fn is not None else json.dumps({"error": f"unknown tool {n!r}"})
            messages.append({"role": "tool", "name": n, "content": str(result)})
    messages.append({"role": "assistant", "content": final_message})
    reward = float(inst._score().score)
    return {"messages": messages, "tools": bridge_tool_schemas(inst), "reward": reward, "seed": int(seed)}
