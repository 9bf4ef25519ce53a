"""Property tests of the action parser and `TraceEnv.step`: any text, any JSON nesting, huge inputs, invalid UTF-8.

`parse_action` never raises and always yields calls, text or an error; a well-formed call survives every accepted
wrapper form; `step` on every committed env never raises and always answers a str inside the observation space.
"""

from __future__ import annotations

import json
import math

import gymnasium as gym
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

import trace_envs  # noqa: F401  (registers the committed envs)
from trace_envs.runtime.base import MAX_TEXT
from trace_envs.runtime.parse import MAX_ARGUMENT_DEPTH, MAX_CALLS_PER_ACTION, ParsedAction, parse_action

from _reliability import committed_envs, examples, probe_env_class, user_stack

# The committed envs, plus a hand-built probe env whose check uses every clause type and whose write tool takes array
# and object arguments.
ENVS = committed_envs() + ["<probe>"]

# ---- strategies ------------------------------------------------------------------------------------------------------

ANY_CHAR = st.characters(exclude_categories=())  # every code point, lone surrogates included
any_text = st.text(ANY_CHAR, max_size=200)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**60), max_value=10**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | any_text
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(any_text, inner, max_size=5),
    max_leaves=30,
)
# JSON values without NaN (NaN != NaN), used where a round trip is compared.
plain_scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False) | any_text
)
plain_values = st.recursive(
    plain_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=15,
)
tool_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
arguments = st.dictionaries(st.text(ANY_CHAR, max_size=12), plain_values, max_size=5)
call_objects = st.fixed_dictionaries({"name": tool_names, "arguments": arguments})

TOKENS = ['{', '}', '[', ']', '"name"', '"arguments"', '"function"', '"tool_calls"', ':', ',', '"', '\\', 'null',
          '<tool_call>', '</tool_call>', '{}', '[]', '"x"', '1e999', '-0', 'NaN', '\x00', '\ufffd', '\ud800', ' ']
token_soup = st.lists(st.sampled_from(TOKENS) | any_text, max_size=40).map("".join)


@st.composite
def huge_text(draw) -> str:
    """Big inputs, built by repetition (hypothesis would take ages to draw them char by char)."""
    unit = draw(st.sampled_from(["x", "é", "\ud83d", "[", "{\"a\":", "<tool_call>", "\x00", " ", "{\"name\": \"a\"}, "]))
    n = draw(st.integers(min_value=1, max_value=260_000 // len(unit)))
    prefix = draw(st.sampled_from(["", "[", "{\"name\": \"a\", \"arguments\": ", "<tool_call>"]))
    return prefix + unit * n


@st.composite
def deep_json(draw) -> str:
    """JSON nested from a few levels up to far beyond the interpreter's recursion limit, with or without closers."""
    depth = draw(st.sampled_from([1, 2, 3, 4, 5, 50, 500, 900, 990, 1000, 2000, 10_000, 100_000]))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}"), ('{"arguments":', "}"), ('{"tool_calls":[', "]}")]))
    inner = draw(st.sampled_from(["1", "{}", '{"name": "a", "arguments": {}}', '"x"']))
    closed = draw(st.booleans())
    text = opener * depth + inner + (closer * depth if closed else "")
    if draw(st.booleans()):
        text = '{"name": "a", "arguments": {"k": ' + text + ("}}" if closed else "")
    return text


def wrap_calls(calls: list[dict], form: str, around: str) -> str:
    if form == "object":
        return json.dumps(calls[0])
    if form == "list":
        return json.dumps(calls)
    if form == "tags":
        return around + "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls) + around
    if form == "openai":
        return json.dumps(
            [{"id": f"c{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
             for i, c in enumerate(calls)]
        )
    if form == "tool_calls":
        return json.dumps({"tool_calls": [{"type": "function", "function": c} for c in calls]})
    raise AssertionError(form)


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def assert_well_formed(parsed: ParsedAction) -> None:
    assert isinstance(parsed, ParsedAction)
    if parsed.error is not None:
        assert isinstance(parsed.error, str) and parsed.error and not parsed.calls
        return
    assert isinstance(parsed.text, str)
    assert len(parsed.calls) <= MAX_CALLS_PER_ACTION
    for call in parsed.calls:
        assert isinstance(call.name, str) and call.name
        assert isinstance(call.arguments, dict)
        assert call.call_id is None or isinstance(call.call_id, str)


# ---- the parser ------------------------------------------------------------------------------------------------------

anything = (
    any_text
    | token_soup
    | json_values.map(lambda v: json.dumps(v))
    | json_values.map(lambda v: json.dumps({"name": "a", "arguments": v}))
    | json_values.map(lambda v: json.dumps({"tool_calls": v}))
    | json_values.map(lambda v: json.dumps({"type": "function", "function": {"name": "a", "arguments": json.dumps(v)}}))
    | json_values.map(lambda v: "<tool_call>" + json.dumps(v) + "</tool_call>")
    | st.binary(max_size=300).map(lambda b: b.decode("utf-8", errors="replace"))
    | deep_json()
)


@examples(200)
@given(anything)
def test_property_parse_action_never_raises(text):
    assert_well_formed(parse_action(text))


@examples(60)
@given(st.binary(max_size=500))
def test_property_parse_action_accepts_raw_bytes(raw):
    assert_well_formed(parse_action(raw))


@examples(30)
@given(huge_text() | deep_json())
def test_property_parse_action_huge_and_deep(text):
    assert_well_formed(parse_action(text))


@examples(100)
@given(
    st.lists(call_objects, min_size=1, max_size=MAX_CALLS_PER_ACTION),
    st.sampled_from(["object", "list", "tags", "openai", "tool_calls"]),
    st.text(st.characters(exclude_characters="<>", exclude_categories=("Cs",)), max_size=30),
)
def test_property_well_formed_calls_round_trip(calls, form, around):
    if form == "object":
        calls = calls[:1]
    if form == "tags":  # the tag form cannot carry its own closing tag inside a call
        assume("</tool_call>" not in json.dumps(calls))
    parsed = parse_action(wrap_calls(calls, form, around))
    assert parsed.error is None, parsed.error
    assert [c.name for c in parsed.calls] == [c["name"] for c in calls]
    for got, want in zip(parsed.calls, calls):
        assert _same(got.arguments, want["arguments"])
    if form == "tags":
        assert parsed.text == (around + around).strip() or parsed.text == around.strip() or around.strip() in parsed.text


@examples(30)
@given(st.lists(call_objects, min_size=MAX_CALLS_PER_ACTION + 1, max_size=MAX_CALLS_PER_ACTION + 5))
def test_property_too_many_calls_is_an_error_not_a_crash(calls):
    parsed = parse_action(json.dumps(calls))
    assert parsed.error is not None and "too many" in parsed.error


# ---- env.step --------------------------------------------------------------------------------------------------------

_ENVS: dict[str, gym.Env] = {}


def _env(name: str) -> gym.Env:
    if name not in _ENVS:
        if name == "<probe>":
            _ENVS[name] = gym.wrappers.PassiveEnvChecker(probe_env_class()())
        else:
            _ENVS[name] = gym.make(f"trace/{name}")
    return _ENVS[name]


@st.composite
def env_actions(draw, tools: list[dict], known: tuple = ()) -> str:
    """An action for an env: arbitrary text, or a call to one of its own tools with arbitrary arguments."""
    kind = draw(st.sampled_from(["any", "own_tool", "own_tool_good_keys", "deep_arguments", "huge", "deep", "bytes"]))
    event(f"action kind: {kind}")
    if kind == "any":
        return draw(anything)
    if kind == "bytes":
        return draw(st.binary(max_size=300)).decode("utf-8", errors="replace")
    if kind == "huge":
        return draw(huge_text())
    if kind == "deep":
        return draw(deep_json())
    # an env may offer the agent no tool at all (the user's device is checked and fixed by the user): call a missing one
    tool = draw(st.sampled_from(tools or [{"function": {"name": "no_such_tool", "parameters": {}}}]))["function"]
    props = list((tool.get("parameters") or {}).get("properties", {}))
    if kind == "own_tool_good_keys" and props:
        args = draw(st.fixed_dictionaries({}, optional={p: json_values for p in props}))
    elif kind == "deep_arguments" and props:
        # every argument present, one of them nested up to the parser's own limit
        # type-correct values (known ids for strings) so the call gets past argument checks into the tool itself
        schemas = (tool.get("parameters") or {}).get("properties", {})
        strings = [k for k in known if isinstance(k, str)] or ["A1"]
        typed = {"string": st.sampled_from(strings), "integer": st.just(1), "number": st.just(2.5),
                 "boolean": st.just(True), "array": st.just([]), "object": st.just({})}
        args = {p: draw(typed.get((schemas.get(p) or {}).get("type"), st.sampled_from(strings))) for p in props}
        depth = draw(st.sampled_from([2, 10, 100, 300, 500, 900, 970, 985, 990]))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"k":', "}")]))
        deep_arg = draw(st.sampled_from(props))
        body = json.dumps({"name": tool["name"], "arguments": {**args, deep_arg: "@@"}})
        return body.replace('"@@"', opener * depth + "1" + closer * depth)
    else:
        value = json_values | st.sampled_from(known) if known else json_values
        args = draw(st.dictionaries(any_text | st.sampled_from(props or ["x"]), value, max_size=4))
    form = draw(st.sampled_from(["object", "list", "tags", "openai", "tool_calls"]))
    return wrap_calls([{"name": tool["name"], "arguments": args}], form, "ok ")


def known_values(env: gym.Env) -> tuple:
    """Argument values the oracle uses (ids of real records), so random calls also reach the tools' success paths."""
    out = []
    for action in env.unwrapped.oracle_actions():
        parsed = parse_action(action)
        for call in parsed.calls:
            out += [v for v in call.arguments.values() if isinstance(v, (str, int, float))]
    return tuple(dict.fromkeys(out))


def _check_step(env: gym.Env, out) -> bool:
    obs, reward, terminated, truncated, info = out
    assert isinstance(obs, str)
    assert env.observation_space.contains(obs), repr(obs[:200])
    assert len(obs) <= MAX_TEXT
    assert isinstance(reward, float) and 0.0 <= reward <= 1.0 and not math.isnan(reward)
    assert isinstance(terminated, bool) and isinstance(truncated, bool)
    assert isinstance(info["messages"], list)
    json.dumps(info["messages"])  # what a chat agent would be sent must stay JSON
    return terminated or truncated


@pytest.mark.parametrize("name", ENVS)
@examples(40)
@given(data=st.data(), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_property_step_never_raises(name, data, seed):
    env = _env(name)
    obs, info = env.reset(seed=seed)
    assert env.observation_space.contains(obs)
    actions = data.draw(st.lists(env_actions(info["tools"], known_values(env)), min_size=1, max_size=4))
    with user_stack():
        for action in actions:
            if _check_step(env, env.step(action)):
                break


@pytest.mark.parametrize("name", ENVS)
@examples(25)
@given(data=st.data(), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_property_step_after_oracle_prefix_never_raises(name, data, seed):
    """Odd actions in the middle of an otherwise good episode (records found, writes done) never crash either."""
    env = _env(name)
    env.reset(seed=seed)
    oracle = env.unwrapped.oracle_actions()
    cut = data.draw(st.integers(min_value=0, max_value=len(oracle)))
    tools = env.unwrapped._schemas
    done = False
    for action in oracle[:cut]:
        done = _check_step(env, env.step(action))
        if done:
            break
    if not done:
        for action in data.draw(st.lists(env_actions(tools, known_values(env)), min_size=1, max_size=3)):
            if _check_step(env, env.step(action)):
                break
    # and the episode can always be played to its end
    for _ in range(env.unwrapped.max_turns + 1):
        if env.unwrapped.done:
            break
        _check_step(env, env.step("Is there anything else?"))
    assert env.unwrapped.done


@pytest.mark.parametrize("name", ENVS)
@examples(30, 600)
@given(data=st.data(), seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_property_deeply_nested_arguments_never_crash_step(name, data, seed):
    """A type-correct call on a real record whose one argument nests as deep as the JSON parser allows: the tool,
    the message log and the check at the episode's end all see it; `step` must still answer."""
    env = _env(name)
    env.reset(seed=seed)
    known = known_values(env)
    if not env.unwrapped._schemas:  # the agent has no tool here: nothing takes arguments
        return
    tool = data.draw(st.sampled_from(env.unwrapped._schemas))["function"]
    schemas = (tool.get("parameters") or {}).get("properties", {})
    if not schemas:
        return
    strings = [k for k in known if isinstance(k, str)] or ["A1"]
    simple = {"string": strings[0], "integer": 1, "number": 2.5, "boolean": True, "array": [], "object": {}}
    args = {p: simple.get((s or {}).get("type"), strings[0]) for p, s in schemas.items()}
    deep_arg = data.draw(st.sampled_from(sorted(schemas)))
    depth = data.draw(st.integers(min_value=1, max_value=1000))
    opener, closer = ("[", "]") if (schemas[deep_arg] or {}).get("type") != "object" else ('{"k":', "}")
    action = json.dumps({"name": tool["name"], "arguments": {**args, deep_arg: "@@"}})
    action = action.replace('"@@"', opener * depth + '"x"' + closer * depth)
    with user_stack():
        _check_step(env, env.step(action))
        for _ in range(env.unwrapped.max_turns + 1):
            if env.unwrapped.done:
                break
            _check_step(env, env.step("Thanks, is there anything else?"))


@pytest.mark.parametrize(
    "action, names",
    [
        # found by test_property_too_many_calls_is_an_error_not_a_crash: an argument mentioning the tag sent a
        # well-formed JSON call down the tag path, which then failed to parse it
        ('{"name": "send", "arguments": {"text": "wrap calls in <tool_call> tags"}}', ["send"]),
        ('[{"name": "a", "arguments": {"<tool_call>": null}}, {"name": "b", "arguments": {}}]', ["a", "b"]),
        # text around tags is still the tag form
        ('{"x": 1} <tool_call>{"name": "a", "arguments": {}}</tool_call>', ["a"]),
    ],
)
def test_json_call_mentioning_the_tag_is_still_a_call(action, names):
    parsed = parse_action(action)
    assert parsed.error is None and [c.name for c in parsed.calls] == names


@pytest.mark.parametrize("depth", [MAX_ARGUMENT_DEPTH + 1, 400, 900])
def test_too_deeply_nested_arguments_are_an_error_observation(depth):
    """Found by test_property_deeply_nested_arguments_never_crash_step: arguments nested ~400+ deep passed the parser,
    then `step` raised RecursionError in a deep copy (write tools) or in the Grounded clause at the episode's end."""
    action = json.dumps({"name": "t", "arguments": {"a": "@@"}}).replace('"@@"', "[" * depth + "]" * depth)
    parsed = parse_action(action)
    assert parsed.error is not None and "nested" in parsed.error
    ok = json.dumps({"name": "t", "arguments": {"a": "@@"}}).replace('"@@"', "[" * MAX_ARGUMENT_DEPTH + "]" * MAX_ARGUMENT_DEPTH)
    assert parse_action(ok).error is None
