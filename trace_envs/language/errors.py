"""How a tool's reply says, in words, that the call failed: an error word or an HTTP status at its start ("Error:
...", "ERROR 409: ...", "Failed to ...", "404 Not Found", "Unable to ..."), or a short subject then the failure ("User
not found"); and the lead a user does not need ("Error:", "HTTP 404 Not Found -"). `trace_envs.trajectories.tool_errors`
decides with these which replies are errors, whatever shape the reply has."""

from __future__ import annotations

import re

# The first word of an HTTP status's reason phrase ("404 Not Found", "409 Conflict"): a number then any other word
# ("461.0", "400 passengers") is no status.
STATUS_REASON = (r"(?:bad|unauthori[sz]ed|payment|forbidden|not|method|request|conflict|gone|length|precondition|too|"
           r"unprocessable|locked|failed|internal|service|gateway|insufficient|error|unavailable)\b")
# Text that opens with an error word or an HTTP status: "Error: ...", "ERROR 409: ...", "Failed to ...", "404 Not
# Found", "HTTP 500", "Invalid order id", "Unable to ...", "Permission denied".
TEXT_START = re.compile(
    r"^[\s\[(*#>!_-]{0,3}(?:"
    r"errors?\b(?:\s*\(?[45]\d\d\b\)?)?|error\d|"
    r"fail(?:ed|ure|s)?\b|"
    r"(?:https?|status(?:\s*code)?)\s*:?\s*[45]\d\d\b|[45]\d\d(?:\s*[:\u2013\u2014-]\s|\s+" + STATUS_REASON + r")|"
    r"exception\b|invalid\b|unable to\b|could ?n[o']t\b|can ?n[o']t\b|"
    r"not (?:found|allowed|permitted|authori[sz]ed)\b|no such\b|"
    r"(?:permission|access|request) denied\b|denied\b|forbidden\b|unauthori[sz]ed\b|rejected\b|refused\b"
    r")",
    re.I,
)
# "User not found", "Order does not exist", "Access denied", "Request failed (412):": a short subject, then the
# failure, at the start ("failed" only with a status code: "Speed test failed: No Connection" is a device's report).
SUBJECT_THEN_FAILURE = re.compile(
    r"^[\s\[(*#>!_-]{0,3}(?:[\w#-]+\s+){1,3}(?:not found|does not exist|doesn't exist|denied|is not allowed|not permitted"
    r"|failed\s*\(\s*[45]\d\d\s*\))"
    r"\s*(?:[.:;!,\u2013\u2014-]|$)",
    re.I,
)
MAX_SUBJECT_TEXT = 160
"""A subject-then-failure reply is an error only when it is this short (one short sentence): a longer text that says
"not found" somewhere is a result about something not found."""
# The lead of an error text a user does not need: "Error:", "ERROR 409:", "HTTP 404 Not Found -", "ValueError:".
ERROR_LEAD = re.compile(
    r"^\W{0,3}(?:(?:[a-z_]\w*\.)*\w*(?:error|exception)\b\s*(?:\(?\b[45]\d\d\b\)?)?"
    r"|(?:http\s*)?(?:status\s*)?[45]\d\d\b(?:\s+[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)?)\s*[:\-\u2013\u2014.]?\s*"
    # "Request failed (412): ...", "FAILED - ...": a failure word leads when it opens the text or a status code follows
    # it ("Speed test failed: No Connection" is a device's report, its words all needed)
    r"|^\W{0,3}(?:fail(?:ed|ure)\b|(?:[\w-]+\s+){1,2}failed\s*\(\s*[45]\d\d\s*\))\s*[:\-\u2013\u2014]\s*",
    re.I,
)


# ---- what a backend answers when it refuses a write's argument (see `trace_envs.runtime.backend`) ----------------------
REFUSED_UNKNOWN_ID = "Error: {what} {value} not found"
REFUSED_NOT_ONE_OF = "Error: invalid {what} {value}: must be one of {options}"
REFUSED_NEGATIVE = "Error: invalid {what} {value}: must not be negative"
REFUSED_RANGE = "Error: invalid {what} {value}: must be between {low} and {high}"
REFUSED_NOT_FINITE = "Error: invalid {what} {value}: not a number"
REFUSED_DATE = "Error: invalid {what} {value}: expected a date like {example}"
REFUSED_PLACEHOLDER = "Error: invalid {what} {value}"
REFUSED_TYPE = "Error: invalid {what} {value}: must be {kind}"
# Values a caller passes when it has no real one: never an id, a date or a member of a closed set.
PLACEHOLDER_VALUES = frozenset({
    "", "nan", "null", "none", "undefined", "n/a", "na", "tbd", "todo", "xxx", "x", "placeholder", "unknown",
    "string", "example", "id", "<id>", "...", "?", "-", "made_up", "fake", "dummy", "test",
})
