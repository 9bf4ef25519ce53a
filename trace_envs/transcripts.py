"""Episode transcripts: what `eval --transcripts FILE` writes (one JSON object per line, one line per episode) and
what `show FILE` renders.

A line holds the env and policy, the seed and sample, the reward, whether the check passed, each clause's score
(`reward_breakdown`) and the one-line reason for it (`reasons`), the number of agent turns, the whole conversation as
OpenAI chat messages (`messages`, system prompt first) and, pulled out of it, every tool call with its arguments and
result (`tool_calls`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trace_envs.atomic import write_text_atomic
from trace_envs.evaluation import EpisodeResult, EvalReport

# Long tool results (a whole reservation, a policy) are cut in the rendering only; the file keeps them whole.
SHOW_RESULT_CHARS = 600


class TranscriptError(ValueError):
    """A transcript file that cannot be read: the message names the file and line."""


def tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every assistant tool call in `messages`, in order: `name`, `arguments` (parsed from JSON text when they are
    text), and `result` (the content of the tool message answering it; None if there is none)."""
    results: dict[str, str] = {}
    for m in messages:
        if m.get("role") == "tool" and m.get("tool_call_id"):
            results[str(m["tool_call_id"])] = str(m.get("content") or "")
    calls: list[dict[str, Any]] = []
    unanswered: list[int] = []
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                fn = c.get("function", c)
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass  # keep the text the model wrote: it is what the transcript is for
                call_id = c.get("id")
                calls.append({"name": fn.get("name", ""), "arguments": args,
                              "result": results.get(str(call_id)) if call_id else None})
                if not call_id:
                    unanswered.append(len(calls) - 1)
        elif m.get("role") == "tool" and not m.get("tool_call_id") and unanswered:
            # a tool message without an id answers the oldest call without one (the bridge's order)
            calls[unanswered.pop(0)]["result"] = str(m.get("content") or "")
    return calls


def transcript_record(env_id: str, policy: str, result: EpisodeResult) -> dict[str, Any]:
    """The transcript line of one episode.

    Args:
        env_id: the env evaluated. policy: the policy's name. result: the episode.
    """
    record: dict[str, Any] = {
        "env_id": env_id,
        "policy": policy,
        "seed": result.seed,
        "sample": result.sample,
        "reward": result.reward,
        "passed": result.passed,
        "reward_breakdown": dict(result.breakdown),
        "reasons": dict(result.reasons),
        "turns": result.turns,
        "messages": list(result.messages),
        "tool_calls": tool_calls(result.messages),
    }
    if result.adapter is not None:
        record["adapter"] = result.adapter
    return record


def write_transcripts(report: EvalReport, path: str | Path) -> int:
    """Write one transcript line per episode of `report` to `path`; returns the number written.

    A file is replaced atomically; anything else that exists (a pipe, /dev/stdout, a device) is written into as it
    is, never replaced."""
    lines = [json.dumps(transcript_record(report.env_id, report.policy, r), default=str) for r in report.results]
    text = "".join(line + "\n" for line in lines)
    path = Path(path)
    if path.exists() and not path.is_file():
        with path.open("w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        write_text_atomic(path, text)
    return len(lines)


def read_transcripts(path: str | Path) -> list[dict[str, Any]]:
    """Every transcript in a file; a `TranscriptError` naming the file and line for anything else."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TranscriptError(f"{path}: cannot read ({exc})") from None
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise TranscriptError(f"{path}:{n}: not JSON ({exc})") from None
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            raise TranscriptError(f"{path}:{n}: not a transcript (a JSON object with a 'messages' list)")
        records.append(record)
    return records


def _cut(text: str, limit: int = SHOW_RESULT_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]} ... [{len(text) - limit} more characters]"


def render_transcript(record: dict[str, Any], *, system: bool = False) -> str:
    """One episode as readable text: a header, each turn (`user:`, `agent:`, `-> tool(args)`, `<- result`), then every
    clause with its score and reason.

    Args:
        record: one transcript line (as `read_transcripts` returns it).
        system: include the system prompt (policy and tools; long, so left out by default).
    """
    head = (f"env {record.get('env_id')}  policy {record.get('policy')}  seed {record.get('seed')}  "
            f"sample {record.get('sample')}")
    verdict = "passed" if record.get("passed") else "failed"
    lines = [head, f"reward {float(record.get('reward', 0.0)):.3f} ({verdict}), {record.get('turns', 0)} agent turns"]
    if record.get("adapter"):
        lines.append(f"adapter {record['adapter']}")
    lines.append("")
    for m in record["messages"]:
        role, content = m.get("role"), str(m.get("content") or "")
        if role == "system":
            if system:
                lines += ["system:", content, ""]
            else:
                lines.append(f"system: ({len(content)} characters; --system shows it)")
        elif role == "user":
            lines.append(f"user: {content}")
        elif role == "assistant":
            if content:
                lines.append(f"agent: {content}")
            for c in m.get("tool_calls") or []:
                fn = c.get("function", c)
                args = fn.get("arguments", {})
                lines.append(f"agent -> {fn.get('name', '')}({args if isinstance(args, str) else json.dumps(args)})")
        elif role == "tool":
            lines.append(f"  <- {m.get('name') or 'tool'}: {_cut(content)}")
    lines += ["", "check:"]
    reasons = record.get("reasons") or {}
    for clause, score in (record.get("reward_breakdown") or {}).items():
        why = reasons.get(clause, "")
        lines.append(f"  {clause}: {float(score):.2f}" + (f"  ({why})" if why else ""))
    for clause in [c for c in reasons if c not in (record.get("reward_breakdown") or {})]:
        lines.append(f"  {clause}: inactive  ({reasons[clause]})")
    return "\n".join(lines)
