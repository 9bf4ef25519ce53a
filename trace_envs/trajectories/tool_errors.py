"""Whether a tool's reply is an error, in every shape sources write one, and the error as a sentence.

Sources mark errors in different ways, and many do not mark them at all:

- a flag beside the reply (tau2's `error: true` on the tool message);
- a JSON envelope: `{"error": "..."}`, `{"errors": [...]}`, `{"status": "failed", "message": "..."}`,
  `{"status": 409, ...}`, `{"success": false, ...}`. Only an envelope counts: a record that has a `status` field
  (an order `{"order_id": ..., "status": "failed", ...}`) is what a read returned, and a `message` alone
  (`{"message": "Line resumed"}`) is a success's acknowledgement;
- an exception line, as ToolSandbox's execution environment prints one (`ValueError: ...`, `PermissionError: ...`,
  a `Traceback ...`);
- plain text that opens with an error word or a status code: `Error: ...`, `ERROR 409: ... call X first`,
  `Failed to ...`, `404 Not Found`, `Not found`, `Access denied`, `User not found`.

`tool_error` decides, with its reason, and every reader uses it; `error_message` gives the error's text as a user
could read it (the sentence the error-recovery family tells and matches). Both read text as data only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from trace_envs.language.errors import ERROR_LEAD, MAX_SUBJECT_TEXT, SUBJECT_THEN_FAILURE, TEXT_START

FLAGGED = "flagged by the source"
MAX_TEXT = 100_000
"""Longer replies are not parsed as JSON to look for an envelope (a real error is short)."""

ENVELOPE_KEYS = frozenset({
    "error", "errors", "error_code", "error_type", "error_message", "status", "status_code", "statuscode", "code",
    "http_status", "message", "detail", "details", "reason", "success", "ok", "hint", "type", "title",
    "request_id", "timestamp", "retryable", "retry_after",
})  # fmt: skip
"""Keys of an error (or status) envelope. An object with other keys than these, and more than MAX_ENVELOPE_EXTRA of
them, is a record: its `status` is the record's, not the call's."""
MAX_ENVELOPE_EXTRA = 2
FAILED_STATUSES = frozenset({
    "error", "failed", "failure", "fail", "denied", "rejected", "forbidden", "unauthorized", "not_found",
    "not found", "invalid", "conflict", "exception", "aborted", "refused",
})  # fmt: skip
_STATUS_KEYS = ("status", "status_code", "statuscode", "http_status", "code")
_CODE = re.compile(r"^[45]\d\d$")
_MESSAGE_KEYS = ("error", "error_message", "message", "detail", "details", "reason", "title", "errors")


_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?P<type>[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failure))(?::\s?(?P<message>.*))?$"
)


def exception_in(text: str) -> tuple[str, str] | None:
    """`(exception type, message)` when a tool result reports an exception, else None."""
    if text.startswith("Error: "):  # ToolSandbox's own reply to incomplete code
        return "Error", text[len("Error: "):]
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return None
    m = _EXCEPTION_LINE.match(lines[-1].strip())
    if m and (len(lines) == 1 or lines[0].startswith("Traceback")):
        return m.group("type"), (m.group("message") or "").strip()
    if lines[0].startswith("Traceback"):
        return "Exception", lines[-1].strip()
    return None


def _failed_status(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 400 <= value <= 599
    if isinstance(value, str):
        text = value.strip().lower()
        return text in FAILED_STATUSES or bool(_CODE.match(text))
    return False


def _is_envelope(data: dict[str, Any]) -> bool:
    extra = [k for k in data if str(k).lower() not in ENVELOPE_KEYS]
    return len(extra) <= MAX_ENVELOPE_EXTRA


def _json_error(data: Any) -> str | None:
    if not isinstance(data, dict) or not _is_envelope(data):
        return None
    keys = {str(k).lower(): k for k in data}
    for name in ("error", "errors", "error_message", "error_code"):
        if name in keys and data[keys[name]] not in (None, False, "", [], {}, 0):
            return f'a JSON "{keys[name]}"'
    for name in _STATUS_KEYS:
        if name in keys and _failed_status(data[keys[name]]):
            if name == "code" and not ({"message", "detail", "reason"} & set(keys)):
                continue  # a bare `code` is as often a record's own field
            return f'a JSON "{keys[name]}" of {json.dumps(data[keys[name]])}'
    for name in ("success", "ok"):
        if name in keys and data[keys[name]] is False:
            return f'a JSON "{keys[name]}": false'
    return None


def _parse(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or len(stripped) > MAX_TEXT:
        return None
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return None


def tool_error(result: str | None, *, flagged: bool = False) -> str | None:
    """Why a tool's reply is an error, or None when it is not one.

    `result`: the reply's text as the source wrote it (JSON, a repr read into JSON, plain text); `flagged`: the source
    marked the reply as an error itself (tau2's `error` flag, a ToolSandbox exception logged beside the call), which
    settles it. The reason names the shape: `flagged by the source`, `a JSON "error"`, `a JSON "status" of "failed"`,
    `a ValueError exception`, `text opening with "ERROR 409"`."""
    if flagged:
        return FLAGGED
    if not isinstance(result, str) or not result.strip():
        return None
    data = _parse(result)
    if data is not None:
        return _json_error(data)
    exc = exception_in(result.strip())
    if exc is not None and exc[0] != "Error":
        return f"a {exc[0]} exception"
    head = result.strip()
    m = TEXT_START.match(head) or (SUBJECT_THEN_FAILURE.match(head) if len(head) <= MAX_SUBJECT_TEXT else None)
    return f'text opening with "{" ".join(m.group(0).split())[:40]}"' if m else None


def _message_of(data: Any, depth: int = 0) -> str | None:
    if depth > 3:
        return None
    if isinstance(data, str):
        return data.strip() or None
    if isinstance(data, list):
        parts = [m for m in (_message_of(x, depth + 1) for x in data[:3]) if m]
        return "; ".join(parts) or None
    if isinstance(data, dict):
        keys = {str(k).lower(): k for k in data}
        for name in _MESSAGE_KEYS:
            if name in keys:
                found = _message_of(data[keys[name]], depth + 1)
                if found:
                    return found
    return None


def error_message(result: str | None) -> str:
    """The error a reply states, as a sentence a user could read: the `error` (or `message`, `detail`) of a JSON
    envelope, an exception's message, a text without its `Error:` / `ERROR 409:` / `HTTP 404 Not Found -` lead.
    `{"error": "autopay is disabled on this account: enable it with enable_autopay first"}` and
    `ERROR 409: autopay is disabled on this account: enable it with enable_autopay first` both give
    `autopay is disabled on this account: enable it with enable_autopay first`. Empty for an empty reply."""
    if not isinstance(result, str):
        return ""
    text = result.strip()
    data = _parse(text)
    if data is not None:
        found = _message_of(data)
        return _without_lead(found) if found else text
    exc = exception_in(text)
    if exc is not None and exc[1]:
        return _without_lead(exc[1])
    return _without_lead(text)


def _without_lead(text: str) -> str:
    body = ERROR_LEAD.sub("", " ".join(text.split()), count=1).strip()
    return body or text.strip()
