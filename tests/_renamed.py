"""A planted domain's runs under another business's names: every tool, argument, record field and categorical value in
`mapping` is replaced wherever it appears (messages, tool calls and results, tool schemas, expected actions, the
policy). A family that finds a deficit only under the names it was written for fails on these."""

from __future__ import annotations

import json
import re
from typing import Any

from trace_envs.trajectories.models import GroundTruthAction, Run, ToolCall


def _pattern(mapping: dict[str, str]) -> re.Pattern:
    words = sorted(mapping, key=len, reverse=True)
    return re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9_])")


def rename_text(text: str, mapping: dict[str, str]) -> str:
    return _pattern(mapping).sub(lambda m: mapping[m.group(1)], text)


def rename_value(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        return rename_text(value, mapping)
    if isinstance(value, dict):
        return {rename_text(k, mapping): rename_value(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [rename_value(v, mapping) for v in value]
    return value


def rename_run(run: Run, mapping: dict[str, str]) -> Run:
    data = json.loads(run.model_dump_json())
    data = rename_value(data, mapping)
    data["run_id"], data["task_id"] = run.run_id, run.task_id
    data["tool_calls"] = [ToolCall(**c) for c in data["tool_calls"]]
    data["ground_truth"] = [GroundTruthAction(**g) for g in data["ground_truth"] or []]
    return Run(**data)
