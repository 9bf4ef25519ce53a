"""The README.md of a generated env: its capability, policy excerpt, tools, observation and action format, check
clauses with their weights, and one oracle episode, rendered from `templates/env_readme.md.j2`.

Values reach the page only through escaping filters: `md` for inline text (markdown's table and code characters
escaped, one line) and `block` for a fenced block whose fence is longer than any run of backticks in the text.
"""

from __future__ import annotations

from typing import Any

from trace_envs.families import get_task
from trace_envs.generate.policies import run_actions
from trace_envs.generate.render import environment
from trace_envs.runtime.backend import argument_roles
from trace_envs.runtime.base import ACTION_FORMAT, TraceEnv

SEEDS_FOR_CLASSES = 50


def _episode(env: TraceEnv) -> tuple[float, str]:
    env.reset(seed=0)
    reward, info = run_actions(env, env.oracle_actions(), 0)
    lines = []
    for m in info.get("messages", env.messages)[1:]:
        if m.get("tool_calls"):
            for c in m["tool_calls"]:
                lines.append(f"agent calls {c['function']['name']}({c['function']['arguments']})")
        elif m["role"] == "tool":
            lines.append(f"tool: {m['content']}")
        else:
            lines.append(f"{'agent' if m['role'] == 'assistant' else m['role']}: {m['content']}")
    return reward, "\n".join(lines)


def env_readme(env_cls: type[TraceEnv]) -> str:
    """The README.md text of the env `env_cls` (deterministic: seed 0 for the episode, seeds 0-49 for the classes)."""
    spec = env_cls.SPEC
    env = env_cls()
    counts: dict[str, int] = {}
    for seed in range(SEEDS_FOR_CLASSES):
        env.reset(seed=seed)
        counts[env.scenario.klass] = counts.get(env.scenario.klass, 0) + 1
    classes = [f"{k} {v / SEEDS_FOR_CLASSES:.2f}" for k, v in sorted(counts.items())] if len(counts) > 1 else []
    reward, episode = _episode(env)
    tools = [
        {"name": t.name, "kind": t.kind, "description": t.description, "args": ", ".join([
            f"{a}{'' if a in t.required else '?'}: {s.get('type', 'any') if isinstance(s, dict) else 'any'}"
            for a, s in t.properties.items()
        ]) or "-"}
        for t in env.tool_specs
    ]
    clauses: list[dict[str, Any]] = [
        {"id": c.id, "type": c.type + (" (penalty)" if getattr(c, "penalty", False) else ""),
         "weight": "-" if getattr(c, "penalty", False) else f"{c.weight:g}", "when": c.when, "requires": c.requires,
         "description": c.description}
        for c in env.check.clauses
    ]
    binding = next((c for c in env.check.clauses if c.type == "arguments_bound"), None)
    arguments = [
        {"tool": t.name, "arg": arg, "role": role}
        for t in env.tool_specs if t.kind == "write"
        for arg, role in argument_roles(spec, t, binding).items()
    ]
    return environment().get_template("env_readme.md.j2").render(
        spec=spec, summary=get_task(spec.family).summary, classes=classes, tools=tools, clauses=clauses,
        arguments=arguments,
        action_format=ACTION_FORMAT, max_turns=env.max_turns, reward=f"{reward:.2f}", episode=episode,
    )
