"""Source formats, one module each, registered as they are imported; a user's own registers the same way.

Built-in, in sniffing order: `tau_bench` (tau-bench trajectories), `tau2` (tau2-bench results, wrapped and bare list),
`openai_jsonl` (OpenAI-messages JSONL), `toolsandbox` (Apple ToolSandbox run folders). To add one, write a module with
a sniff and a reader and call `register_format(SourceFormat(...))` (see `registry.SourceFormat` and
`examples/custom_format.py`).
"""

from trace_envs.trajectories.formats.common import Record, RunError, records
from trace_envs.trajectories.formats.registry import (
    FormatError,
    NoRunsHere,
    SourceFormat,
    all_formats,
    document_format,
    folder_format,
    get_format,
    line_format,
    register_format,
    supported_formats,
    unregister_format,
)
from trace_envs.trajectories.formats import tau_bench, tau2, openai_jsonl, toolsandbox  # noqa: E402,F401 (registers)

__all__ = [
    "FormatError",
    "NoRunsHere",
    "Record",
    "RunError",
    "SourceFormat",
    "all_formats",
    "document_format",
    "folder_format",
    "get_format",
    "line_format",
    "records",
    "register_format",
    "supported_formats",
    "unregister_format",
]
