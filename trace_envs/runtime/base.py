"""`TraceEnv`: the Gymnasium env every generated module builds on.

A generated module subclasses it, sets `SPEC` (the CapabilitySpec) and implements `build_scenario` (seeded world,
check bindings, user script, oracle) and `run_tool` (the target's tools over that world). This base does the rest:
parsing actions, validating arguments, the scripted user, the message log in OpenAI form, the trace and the reward.
"""

from __future__ import annotations

import json
import math
import pickle
import re
import string
import weakref
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from trace_envs.checks.clauses import CheckResult
from trace_envs.checks.trace import ActionTrace, TraceStep
from trace_envs.jsontext import dumps
from trace_envs.language.hints import section as hint_section
from trace_envs.limits import MAX_ARGUMENT_DEPTH, nesting_exceeds
from trace_envs.runtime.backend import argument_mutants, bound_check, refusal, string_leaves
from trace_envs.runtime.parse import ParsedCall, clean_text, parse_action
from trace_envs.runtime.scenario import RESULT, Scenario, ToolError
from trace_envs.runtime.text_space import SharedText
from trace_envs.runtime.user import ScriptedUser
from trace_envs.spec.model import CapabilitySpec, ToolSpec

MAX_TEXT = 100_000
SCENARIO_CACHE = 256  # seeded scenarios kept per env class (validation replays 50 seeds; a trainer, its seed range)
# env class -> seed -> (the spec it was built from, the pickled scenario, its world's ids, the generator's state after),
# or None for a seed built once and not kept yet
_SCENARIOS: "weakref.WeakKeyDictionary[type, dict[int, tuple[Any, bytes, frozenset[str], dict[str, Any]] | None]]" = \
    weakref.WeakKeyDictionary()
GOLDEN = 0.6180339887498949
# Printable ASCII plus the Latin-1 letters and the typographic punctuation real prose uses.
CHARSET = frozenset(
    string.printable + "".join(chr(c) for c in range(0xA0, 0x100)) + "\u2013\u2014\u2018\u2019\u201c\u201d\u2022\u2026\u20ac"
)
_TRANSLATE = {c: "?" for c in range(0x80, 0x2200) if chr(c) not in CHARSET}

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}

REWARD_MODES = ("terminal", "per_turn")

ACTION_FORMAT = (
    "To call a tool, reply with only a JSON object {\"name\": <tool name>, \"arguments\": {...}} "
    "(or wrap it in <tool_call></tool_call> tags). Any other reply is a message to the user."
)


def sanitize(text: str) -> str:
    """Bound the length and replace characters outside the observation charset by '?'."""
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT]
    if text.isascii():
        return text
    return "".join(ch if ch in CHARSET else "?" for ch in text.translate(_TRANSLATE))


_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): ")


def result_text(result: Any, error: bool, style: str = "json") -> str:
    """A tool's reply as the target writes it: JSON (a string as it is), or with `python-repr` what ToolSandbox's
    execution environment prints: the repr of the value (`[{'name': 'Fredrik'}]`, `'a1b2'`, `None`), and for a failed
    call the exception line (`ValueError: <why>`)."""
    if style == "python-repr":
        if error and isinstance(result, dict) and isinstance(result.get("error"), str):
            why = result["error"]  # the target's own exception line when the env replays it, else a ValueError
            return why if _EXCEPTION_LINE.match(why) else f"ValueError: {why}"
        if isinstance(result, str) and result[:1] in ("{", "["):  # a record env's read: the record's JSON
            try:
                result = json.loads(result)
            except ValueError:
                pass
        return repr(result)
    return result if isinstance(result, str) else dumps(result)


def tool_schema(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


def check_arguments(tool: ToolSpec, args: dict[str, Any], types: ArgumentTypes | None = None) -> str | None:
    """A cheap argument check against the tool's schema: required present, no unknown names, top-level JSON types.
    `types` is `argument_types(tool)`, which an env reads once per tool."""
    required, types_of = types or argument_types(tool)
    for a in required:
        if a not in args:
            missing = [a for a in required if a not in args]
            return f"missing required argument(s) for {tool.name}: {', '.join(missing)}"
    # one pass over the arguments on the usual path; an error names every unknown argument first, as it always has
    for name, value in args.items():
        want = types_of.get(name, _UNKNOWN)
        if want is None:
            continue
        if want is _UNKNOWN or not isinstance(value, want[1]) or (not want[2] and isinstance(value, bool)):
            unknown = [a for a in args if a not in types_of]
            if unknown:
                return f"unknown argument(s) for {tool.name}: {', '.join(map(str, unknown))}"
            return f"argument {name!r} of {tool.name} must be {' or '.join(want[0])}"
    return None


ArgumentTypes = tuple[list[str], dict[str, Any]]
_UNKNOWN = object()


def argument_types(tool: ToolSpec) -> ArgumentTypes:
    """The tool's required arguments, and per argument None (any value) or (its JSON type names, the Python types
    they accept, whether a boolean is accepted: a bool is a Python int, yet no JSON integer or number)."""
    types: dict[str, Any] = {}
    for name, schema in tool.properties.items():
        want = schema.get("type") if isinstance(schema, dict) else None
        if want is None:
            types[name] = None
            continue
        kinds = want if isinstance(want, list) else [want]
        accepted = tuple(t for k in kinds for t in _JSON_TYPES.get(k, (object,)))
        bool_ok = any(k not in ("integer", "number") and isinstance(True, _JSON_TYPES.get(k, (object,))) for k in kinds)
        types[name] = (kinds, accepted, bool_ok)
    return tool.required, types


def _increment(paid: float, score: float) -> float:
    """The per-turn reward that brings `paid` (the rewards so far, added in order) to `score` when added to it: the
    difference itself, or a neighbouring float where rounding would miss by a unit. So no error builds up over an
    episode, a step that leaves the score as it was pays exactly 0.0, and the sum is `score` exactly wherever a float
    can make it so; where none can (a score that is no multiple of a power of two, as 1/3, after more than twice as much
    was paid: the sum's rounding is coarser than the score's), it is the nearest float, within 2**-53 of `score`."""
    reward = score - paid
    for toward in (math.inf, -math.inf):
        step = reward
        for _ in range(4):
            if paid + step == score:
                return step
            step = math.nextafter(step, toward)
    return reward


class TraceEnv(gym.Env[str, str]):
    """A text env: actions are tool calls or messages to the user; the reward is the spec's check.

    `reward_mode="terminal"` (the default) pays the check's score on the last step and 0.0 before. With
    `reward_mode="per_turn"` each step pays the change of the check's score on the trace so far that the step caused,
    so the rewards of an episode sum to its terminal score (exactly, see `_increment`), and a clause met and later
    undone (a second write that breaks a penalty clause) is taken back on the step that undid it; every step's info
    then carries the score so far (`score`) and its clauses (`reward_breakdown`)."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}
    SPEC: CapabilitySpec
    terminal_tools: frozenset[str] = frozenset()

    def __init__(self, render_mode: str | None = None, max_turns: int | None = None, hint_rate: float | None = None,
                 reward_mode: str = "terminal"):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {', '.join(map(repr, REWARD_MODES))}, got {reward_mode!r}")
        self.render_mode = render_mode
        self.reward_mode = reward_mode
        self._paid = 0.0  # per_turn: the sum of the rewards paid so far this episode
        self.capability: CapabilitySpec = self.SPEC
        self.max_turns = max_turns or self.SPEC.knobs.max_turns
        self.hint_rate = self.SPEC.knobs.hint_rate if hint_rate is None else hint_rate
        from trace_envs.families.task import hint_of  # the families import the runtime

        # The spec author's hint, else the one the family writes from the spec's params.
        self.hint_text = hint_of(self.SPEC)
        self.tool_specs: list[ToolSpec] = list(self.SPEC.tools)
        self._tools = {t.name: t for t in self.tool_specs}
        self._kinds = {t.name: t.kind for t in self.tool_specs}
        self._argument_types: dict[str, ArgumentTypes] = {}  # per tool, read from its schema on its first call
        self._schemas = [tool_schema(t) for t in self.tool_specs]
        # The spec's check, plus the binding of every argument of the writes this env offers (see runtime.backend).
        self.check = bound_check(self.SPEC, self.tool_specs)
        # SharedText, not Text: async vector envs read Text back from shared memory as padding (see text_space).
        self.observation_space = SharedText(max_length=MAX_TEXT, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(max_length=MAX_TEXT, min_length=1, charset=CHARSET)
        self.scenario: Scenario | None = None
        self.class_draw = 0.0
        self.done = False
        self._messages: list[dict[str, Any]] = []
        self._steps: list[TraceStep] = []
        self._turns = 0
        self._call_counter = 0

    # ---- to implement in a generated module -------------------------------------------------------------------------
    def build_scenario(self, rng: np.random.Generator) -> Scenario:
        raise NotImplementedError

    def run_tool(self, name: str, args: dict[str, Any], state: dict[str, Any]) -> Any:
        raise NotImplementedError

    def final_state(self) -> dict[str, Any]:
        assert self.scenario is not None
        return self.scenario.state

    # ---- Gymnasium API ---------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        # Where this episode falls among the scenario classes (allowed / blocked, ...): with a seed, a low-discrepancy
        # point of it, so any run of consecutive seeds holds each class at its share; without one, a random draw.
        self.class_draw = float((seed * GOLDEN) % 1.0) if seed is not None else float(self.np_random.random())
        self._build(seed)
        # The user sees its facts and requests only, never the bindings or the oracle.
        self.user = ScriptedUser(
            facts=dict(self.scenario.facts), aliases=dict(self.scenario.aliases), requests=list(self.scenario.requests),
            actions=list(self.scenario.user_actions),
        )
        use_hint = bool(self.hint_text) and self.hint_rate > 0 and float(self.np_random.random()) < self.hint_rate
        if options and "hint" in options:
            use_hint = bool(options["hint"]) and bool(self.hint_text)
        self.hint_used = use_hint
        self.system_prompt = self._system_prompt(use_hint)
        self.opening = self.scenario.opening
        self._messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": self.opening},
        ]
        self._steps = [TraceStep.of_text("user", self.opening)]
        self._turns = 0
        self._call_counter = 0
        self._paid = 0.0
        self.done = False
        return sanitize(self.opening), self._info()

    def _build(self, seed: int | None) -> None:
        """The episode's scenario and the ids of its world. A seeded scenario is a function of the spec and the seed
        alone, so a seed built a second time is kept (as a pickle, so no episode sees another's changes to its world)
        with the generator's state after the build: a reset on it again (validation replays the same seeds for every
        probe and mutant, in several instances) costs an unpickling, and the episode that follows is the one a fresh
        build gives. A seed seen once is not pickled: a trainer drawing fresh seeds would pay for a copy it never
        reads (the pickling, and the memory each kept copy takes, cost its episodes a sixth of a step)."""
        cache = _SCENARIOS.setdefault(type(self), {}) if "build_scenario" not in self.__dict__ else {}
        entry = cache.get(seed) if seed is not None else None
        if entry is not None and entry[0] is self.SPEC:
            _, blob, self._world_ids, rng_state = entry
            self.scenario = pickle.loads(blob)
            self.np_random.bit_generator.state = rng_state
            return
        self.scenario = self.build_scenario(self.np_random)
        oracle_calls = [c for action in self.scenario.oracle for c in parse_action(action).calls]
        self._world_ids = frozenset(self._ids_of_world(oracle_calls))
        self.scenario.bindings.setdefault("writes", self._expected_writes(oracle_calls))
        if seed is None or (seed not in cache and len(cache) >= SCENARIO_CACHE):
            return
        if seed not in cache:
            cache[seed] = None  # kept when it is built again
            return
        try:
            blob = pickle.dumps(self.scenario, pickle.HIGHEST_PROTOCOL)
        except Exception:  # a scenario holding something unpicklable (a hand-written env's closure) is rebuilt each time
            return
        cache[seed] = (self.SPEC, blob, self._world_ids, self.np_random.bit_generator.state)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.scenario is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self.done:
            return "The episode has ended; call reset().", 0.0, True, False, self._info()
        self._turns += 1
        parsed = parse_action(action)
        if parsed.error is not None:
            text = clean_text(action)
            self._messages.append({"role": "assistant", "content": text})
            obs = json.dumps({"error": parsed.error})
            self._messages.append({"role": "user", "content": f"[system] {obs}"})
        elif parsed.calls:
            if parsed.text:
                self._record_say(parsed.text)
            obs = self._run_calls(parsed.calls)
        else:
            obs, ended = self.say(parsed.text)
            self.done = self.done or ended
        terminated = self.done
        truncated = not terminated and self._turns >= self.max_turns
        reward = 0.0
        info = self._info()
        ended = terminated or truncated
        if ended:
            self.done = True
        if ended or self.reward_mode == "per_turn":  # terminal mode scores the last step only
            result = self.score()
            info["reward_breakdown"] = result.breakdown
            if self.reward_mode == "terminal":
                reward = result.score
            else:
                reward = self._pay(result.score)
                info["score"] = result.score
            if ended:
                info["success"] = result.passed
        return sanitize(obs), reward, terminated, truncated, info

    def render(self) -> str | None:
        lines = []
        for m in self._messages:
            content = m.get("content") or ""
            if m.get("tool_calls"):
                content = " ".join(f"{c['function']['name']}({c['function']['arguments']})" for c in m["tool_calls"])
            lines.append(f"{m['role']}: {content}")
        text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # ---- direct API for bridges (TRL) and oracles ----------------------------------------------------------------
    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool call against the scenario, record it, return the result text (errors as JSON, never raised).

        Arguments nested past the bound are refused here; parsed actions were already bounded by the parser."""
        args = arguments if isinstance(arguments, dict) else {}
        if nesting_exceeds(args):
            error = json.dumps({"error": f"invalid arguments for {name}: nested more than {MAX_ARGUMENT_DEPTH} levels deep"})
            self._steps.append(TraceStep.of_call(name, {}, error, True))
            self.user.observe_call(name, {}, ok=False, kind=self._kinds.get(name))
            return error
        return self._run_calls([ParsedCall(name, args)])

    def say(self, text: str) -> tuple[str, bool]:
        """The agent tells the user `text`; returns the user's reply and whether the user ended the conversation."""
        self._record_say(text)
        reply, ended = self.user.reply(text)
        for action in self.user.take_performed():
            result = self._user_call(action.tool, dict(action.arguments))
            if RESULT in action.report:  # the user reads out what its tool showed, in the order it did them
                reply = reply.replace(RESULT, result if isinstance(result, str) else json.dumps(result), 1)
        self._messages.append({"role": "user", "content": reply})
        self._steps.append(TraceStep.of_text("user", reply))
        if ended:
            self.done = True
        return reply, ended

    def trace(self) -> ActionTrace:
        return ActionTrace(steps=list(self._steps), final_state=self.final_state(), tool_kinds=self._kinds)

    def score(self) -> CheckResult:
        assert self.scenario is not None
        return self.check.evaluate(self.trace(), self.scenario.bindings)

    def oracle_actions(self) -> list[str]:
        assert self.scenario is not None, "call reset() first"
        return list(self.scenario.oracle)

    def mutant_actions(self) -> dict[str, list[str]]:
        assert self.scenario is not None, "call reset() first"
        return {k: list(v) for k, v in self.scenario.mutants.items()}

    def argument_mutants(self) -> dict[str, list[str]]:
        """The oracle with one non-key argument of its writes wrong (a well-typed other value, an invented id, -1, 0,
        a NaN-like string), one mutant per argument and kind, named `<tool>.<argument>=<kind>`; none without a write.
        Each must score below 1.0 (`validate` plays them)."""
        assert self.scenario is not None, "call reset() first"
        return argument_mutants(self.SPEC, self._tools, list(self.scenario.oracle), parse_action)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self._messages)

    # ---- internals -----------------------------------------------------------------------------------------------
    def _pay(self, score: float) -> float:
        reward = _increment(self._paid, score)
        self._paid += reward
        return reward

    def _record_say(self, text: str) -> None:
        self._messages.append({"role": "assistant", "content": text})
        self._steps.append(TraceStep.of_text("say", text))

    def _user_call(self, name: str, args: dict[str, Any]) -> Any:
        """The user ran its own tool `name` (the agent is never offered it): the trace records the call, whose result
        the user reports in words; only `run_tool` can run it, so a family env that has user actions implements it."""
        try:
            result, error = self.run_tool(name, args, self.scenario.state), False  # type: ignore[union-attr]
        except ToolError as exc:
            result, error = {"error": str(exc)}, True
        self._steps.append(TraceStep.of_call(name, args, result, error))
        return result

    def _run_calls(self, calls: list[ParsedCall]) -> str:
        assert self.scenario is not None
        tool_calls, outputs = [], []
        for call in calls:
            name, args = call.name, call.arguments
            self._call_counter += 1
            cid = call.call_id or f"call_{self._call_counter}"
            tool_calls.append(
                {"id": cid, "type": "function", "function": {"name": name, "arguments": dumps(args)}}
            )
            tool = self._tools.get(name)
            result, error = self._execute(name, args, tool)
            text = result_text(result, error, tool.result_style if tool is not None else "json")
            outputs.append((cid, name, text))
            self._steps.append(TraceStep.of_call(name, args, result, error))
            self.user.observe_call(name, args, ok=not error, kind=self._kinds.get(name))
            if not error and name in self.terminal_tools:
                self.done = True
        self._messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
        for cid, name, text in outputs:
            self._messages.append({"role": "tool", "tool_call_id": cid, "name": name, "content": text})
        if len(outputs) == 1:
            return outputs[0][2]
        return "\n".join(f"{name}: {text}" for _, name, text in outputs)

    def _execute(self, name: str, args: dict[str, Any], tool: ToolSpec | None) -> tuple[Any, bool]:
        if tool is None:
            return {"error": f"unknown tool {name!r}; available: {', '.join(self._tools)}"}, True
        types = self._argument_types.get(name)
        if types is None:
            types = self._argument_types[name] = argument_types(tool)
        problem = check_arguments(tool, args, types)
        if problem is None and tool.kind == "write":
            problem = refusal(self.SPEC, tool, args, self._known_ids())
        if problem is not None:
            return {"error": problem}, True
        try:
            return self.run_tool(name, args, self.scenario.state), False  # type: ignore[union-attr]
        except ToolError as exc:
            return {"error": str(exc)}, True

    def _ids_of_world(self, oracle_calls: list[Any]) -> set[str]:
        """The ids the scenario's world holds: its records', and those the user's own request supplies (what the
        oracle passes: a card on the user's profile the env keeps no record of)."""
        assert self.scenario is not None
        ids = string_leaves(self.scenario.state)
        for c in oracle_calls:
            ids |= string_leaves(c.arguments)
        return ids

    def _expected_writes(self, oracle_calls: list[Any]) -> list[dict[str, Any]]:
        """The writes a correct agent makes in this scenario, as the oracle makes them: what `ArgumentsBound` binds."""
        return [{"tool": c.name, "args": dict(c.arguments)} for c in oracle_calls
                if self._kinds.get(c.name) == "write" and c.name in self._tools]

    def _known_ids(self) -> set[str]:
        """The world's ids and every id a successful call showed so far (a backend knows what it issued)."""
        known = set(self._world_ids)
        for step in self._steps:
            if step.kind != "call" or step.error:
                continue
            result = step.result
            if isinstance(result, str) and result[:1] in ("{", "["):
                try:
                    result = json.loads(result)
                except ValueError:
                    pass
            known |= string_leaves(result)
        return known

    def _system_prompt(self, use_hint: bool) -> str:
        tools = "\n".join(f"- {t.name}: {t.description}" for t in self.tool_specs)
        parts = [
            "You are a customer service agent. Help the user with their request using the tools, following the policy.",
            f"# Policy\n{self.SPEC.policy}" if self.SPEC.policy else "",
            f"# Tools\n{tools}",
            ACTION_FORMAT,
        ]
        if use_hint:
            parts.append(hint_section(self.hint_text))
        return "\n\n".join(p for p in parts if p)

    def _info(self) -> dict[str, Any]:
        return {
            "messages": list(self._messages),
            "tools": self._schemas,
            "capability": self.SPEC.name,
            "spec_hash": self.SPEC.spec_hash,
            "system_prompt": self.system_prompt,
            "opening": self.opening,
            "turn": self._turns,
            "hint": self.hint_used,
        }
