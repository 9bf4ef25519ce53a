"""Whether a tool reads, writes or does neither: from its definition, then from what it did in the runs, names last.

The evidence, strongest first (`infer_kinds` applies it in this order; a `--kinds` override and a hand-off, see
`trace_envs.trajectories.handoff`, are settled before):

1. **the definition**: a kind it states (`x-kind`, MCP `annotations.readOnlyHint` / `destructiveHint`), else what its
   description says the tool does ("Cancel a reservation", "Returns the order", "Read-only", "Does not change ...")
   and a schema that takes new values (`new_address`, "The new plan");
2. **what it changed**: a successful call after which a repeated read of the same record (same tool, same
   arguments, one of them the call's own) returned something else is a write; so is the one call that made a failed
   call succeed when retried unchanged (`update_plate` fails with "autopay is off", `turnOnAutopay`, the same
   `update_plate` succeeds), in at least MIN_UNBLOCKED runs; this last outweighs a description that reads as a read
   ("Verify the contact details of a client" that a failed write waited for, after which it succeeded);
3. **its name**, split in every common style (snake verb-first `cancel_order` or noun-first `leave_request_submit`,
   camelCase `savingsOpen`, dotted `orders.get`, kebab `order-cancel`): the verb at its head, else at its tail;
4. **weaker behaviour**, for a name that says nothing: an action the source's expected actions grade with arguments
   that are not prose is a write; a call seen between identical reads that returned the same is not a write (read);
   a tool whose replies are records is a read.

Nothing says anything: `other`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Iterable, Literal, Mapping

from trace_envs.language.words import READ_VERBS, WRITE_VERBS, dotted_action, noun_headed
from trace_envs.trajectories.models import PROSE_ARGS, Run
from trace_envs.jsontext import shared_loads

ToolKind = Literal["read", "write", "other"]
KINDS = ("read", "write", "other")

OTHER_NAMES = {"think", "calculate", "calculator", "compute", "reason", "plan", "noop"}
PERSON_WORDS = {"human", "humans", "person", "representative", "supervisor", "specialist", "operator", "staff"}
"""A name that sends to one of these (`transfer_to_human_agents`, `escalate_to_supervisor`) changes no record."""
# Description openers that carry no verb of their own ("This tool ...", "Use this to ...", "Allows the agent to ...").
_OPENER = re.compile(
    r"^\s*(?:this (?:tool|function|endpoint|api)\s+(?:is used to\s+|will\s+|can\s+|lets you\s+)?|"
    r"(?:a )?(?:tool|function|endpoint) (?:to|that|for)\s+|use (?:this|it) to\s+|used to\s+|"
    r"allows? (?:the (?:agent|user|assistant)|you) to\s+|lets? (?:the (?:agent|user)|you) |call (?:this|it) to\s+|"
    r"helps? (?:to\s+)?)",
    re.I,
)
_READ_ONLY = re.compile(r"\b(?:read[- ]only|does not (?:change|modify|alter|write)|without (?:changing|modifying)|"
                        r"no side[- ]effects?|only reads)\b", re.I)
_CHANGES = re.compile(r"\b(?:changes|modifies|alters|overwrites|permanently|irreversibl[ey]|billed|charged)\b", re.I)
_NEW_VALUE = re.compile(r"^\s*(?:the )?new\b", re.I)


def name_words(name: str) -> list[str]:
    """A tool name's words, lower-cased, in any common style: `cancel_order`, `leave_request_submit`,
    `savingsOpen`, `getHTTPStatus` (get, http, status), `orders.get`, `order-cancel`."""
    words = []
    for part in re.split(r"[^A-Za-z0-9]+", name):
        words += re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", part)
    return [w.lower() for w in words]


def _verb(word: str) -> str:
    """A verb's base form as the verb sets hold it: `gets` -> get, `searches` -> search, `modifies` -> modify."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _kind_of_verb(word: str, inflected: bool = False) -> ToolKind | None:
    """The kind a verb says; `inflected`: the word may be a third-person form ("Gets", "Searches"), as descriptions
    write them (a name's plural head is a noun: `books_list` lists books)."""
    if inflected and word == "returns":
        return "read"  # "Returns the order's details": gives back, not a return of goods
    for w in (word, _verb(word)) if inflected else (word,):
        if w in OTHER_NAMES:
            return "other"
        if w in READ_VERBS:
            return "read"
        if w in WRITE_VERBS:
            return "write"
    return None


def kind_from_name(name: str) -> tuple[ToolKind, str] | None:
    """read / write / other with the word that says so, from the tool's name; None when the name says nothing.

    The verb is looked for in a dotted name's last part (`exchange_rates.lookup`), at the head (`cancel_order`,
    `getUser`), then at the tail (`leave_request_submit`, `savingsOpen`, `user_lookup`), then anywhere; a name that
    sends to a person (`transfer_to_human_agents`) is other: it changes no record of the domain."""
    words = name_words(name)
    if not words:
        return None
    if "_".join(words) in OTHER_NAMES:
        return "other", "_".join(words)
    if "to" in words[1:] and PERSON_WORDS & set(words[words.index("to") + 1:]):
        return "other", "sends to a person"
    acts = dotted_action(name)  # resource.action: `exchange_rates.lookup` looks up ("exchange" is a noun here)
    kind = _kind_of_verb(acts[0]) if acts else None
    if kind is not None:
        return kind, acts[0]
    # a head that is as often a noun gives way to a tail that is only a verb (`exchange_rates_retrieve` retrieves)
    ends = (words[-1], words[0]) if noun_headed(words) and _kind_of_verb(words[-1]) in ("read", "write") \
        else (words[0], words[-1])
    for word in ends:
        kind = _kind_of_verb(word)
        if kind is not None:
            return kind, word
    if words[0] in ("is", "has", "can"):
        return "read", words[0]
    for word in words[1:-1]:
        kind = _kind_of_verb(word)
        if kind is not None and kind != "other":
            return kind, word
    return None


def infer_kind_from_name(name: str) -> ToolKind | None:
    """read / write / other from the tool's name alone, or None when the name says nothing (see `kind_from_name`)."""
    found = kind_from_name(name)
    return found[0] if found else None


def definition_function(definition: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function part of an OpenAI tool schema (`{"type": "function", "function": {...}}`), or the schema itself."""
    fn = definition.get("function")
    return fn if isinstance(fn, Mapping) else definition


def definition_description(definition: Mapping[str, Any] | None) -> str | None:
    """The description a tool definition gives, stripped; None when it has none."""
    if not definition:
        return None
    desc = definition_function(definition).get("description")
    return desc.strip() if isinstance(desc, str) and desc.strip() else None


def stated_kind(definition: Mapping[str, Any]) -> ToolKind | None:
    """A kind the definition states outright: `kind` / `x-kind`, or MCP-style `annotations.readOnlyHint`."""
    for holder in (definition, definition.get("function") or {}):
        if not isinstance(holder, Mapping):
            continue
        for key in ("kind", "x-kind", "x_kind"):
            v = holder.get(key)
            if isinstance(v, str) and v.lower() in KINDS:
                return v.lower()  # type: ignore[return-value]
        ann = holder.get("annotations")
        if isinstance(ann, Mapping):
            if ann.get("readOnlyHint") is True:
                return "read"
            if ann.get("readOnlyHint") is False or ann.get("destructiveHint") is True:
                return "write"
    return None


# What "Get a ..." fetches when it reads: "Get a list of the user's orders", "Get a summary of ...".
_FETCHED = frozenset({"list", "summary", "overview", "count", "copy", "description", "breakdown", "snapshot",
                      "report", "quote", "record", "history"})


def _acquires(words: list[str]) -> bool:
    """A description that opens with getting something new ("Get an extension on the final project for an
    enrollment. Billed to a financial aid award on file."): obtaining, not reading, so its verb decides nothing and
    the rest of the evidence does."""
    head = [w.lower() for w in words[:3]]
    return len(head) >= 3 and head[0] in ("get", "gets", "obtain", "obtains") and head[1] in ("a", "an") \
        and head[2] not in _FETCHED


def kind_from_definition(definition: Mapping[str, Any] | None) -> tuple[ToolKind, str] | None:
    """read / write / other with why, from a tool definition: the kind it states, else what its description says
    the tool does (its first verb; "read-only" / "does not change" / "permanently"), else a schema that takes a new
    value (an argument `new_*` or described "The new ..."). None when the definition says nothing of it."""
    if not definition:
        return None
    stated = stated_kind(definition)
    if stated is not None:
        return stated, "the definition states it"
    desc = definition_description(definition)
    if desc:
        if _READ_ONLY.search(desc):
            return "read", "its description says it changes nothing"
        words = re.findall(r"[A-Za-z]+", _OPENER.sub("", desc, count=1))
        kind = _kind_of_verb(words[0].lower(), inflected=True) if words and not _acquires(words) else None
        if kind is not None:
            return kind, f'its description: "{" ".join(desc.split())[:60]}"'
        if _CHANGES.search(desc):
            return "write", "its description says it changes records"
    params = definition_function(definition).get("parameters")
    props = params.get("properties") if isinstance(params, Mapping) else None
    if isinstance(props, Mapping):
        for arg, schema in props.items():
            about = schema.get("description") if isinstance(schema, Mapping) else None
            if str(arg).lower().startswith("new_") or (isinstance(about, str) and _NEW_VALUE.match(about)):
                return "write", f"its schema takes a new value ({arg})"
    return None


# --------------------------------------------------------------------------------------------------------------------
# behaviour


_DONE_WORD = re.compile(r"\b(?:[a-z]{3,}ed|done|success(?:ful(?:ly)?)?|complete|ok)\b", re.I)
_SUCCESS_KEYS = ("success", "ok", "done")
MIN_UNBLOCKED = 2  # a retry that succeeded once after a read may have met a passing fault


def _acknowledges(record: Any, raw: str | None) -> bool:
    """Whether a reply acknowledges a change rather than shows a record: a small object whose values say it was done
    (`{"status": "credit requested"}`, `{"success": true}`), or a short text that does ("Loan renewed.")."""
    if isinstance(record, dict):
        if len(record) > 3:
            return False
        if any(record.get(k) is True for k in _SUCCESS_KEYS):
            return True
        return any(isinstance(v, str) and _DONE_WORD.search(v) and len(v) < 60 for v in record.values())
    text = (raw or "").strip()
    return record is None and 0 < len(text) < 80 and bool(_DONE_WORD.search(text))


def _record(raw: str | None) -> Any:
    """A reply parsed when it is a record (a JSON object, or a list holding one), else None."""
    text = (raw or "").strip()
    if text[:1] not in ("{", "["):
        return None
    try:
        data = shared_loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict) and data:
        return data
    if isinstance(data, list) and any(isinstance(x, dict) for x in data):
        return data
    return None


def _same_record_changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """`after` is the record `before` showed (most keys of each shared, an id-like key equal), with a value changed."""
    shared = before.keys() & after.keys()
    if len(shared) < 2 or len(shared) < 0.5 * max(len(before), len(after)):
        return False
    ids = [k for k in shared if str(k).lower() == "id" or str(k).lower().endswith("_id")]
    if not ids or any(before[k] != after[k] for k in ids):
        return False
    return any(before[k] != after[k] for k in shared)


def _values(arguments: dict[str, Any]) -> set[str]:
    return {str(v) for k, v in arguments.items() if k not in PROSE_ARGS and isinstance(v, (str, int)) and str(v)}


class Behaviour:
    """What the runs show of each agent tool: the changes it made to records read again after it, the identical
    reads around it that did not change, whether its replies are records, and the actions the source grades."""

    def __init__(self, runs: Iterable[Run], may_read: Mapping[str, bool]) -> None:
        """`may_read`: per tool, False when its definition or name already says it writes (its repeated calls are
        then no reads to compare)."""
        self.changed: Counter[str] = Counter()
        self.unchanged: Counter[str] = Counter()
        self.replies: Counter[str] = Counter()
        self.records: Counter[str] = Counter()
        self.acks: Counter[str] = Counter()
        self.graded: set[str] = set()
        self.unblocked: Counter[str] = Counter()
        for run in runs:
            self._one(run, may_read)
            self.graded.update(g.name for g in run.ground_truth or [] if g.requestor == "agent" and g.arguments
                               and not all(k in PROSE_ARGS for k in g.arguments))

    def _one(self, run: Run, may_read: Mapping[str, bool]) -> None:
        self._unblocking(run)
        calls = [c for c in run.agent_calls if not c.error and c.result is not None]
        last: dict[str, tuple[int, str]] = {}
        read: dict[str, tuple[str, dict[str, Any]]] = {}  # argument value -> (tool, record) its latest call returned
        for i, c in enumerate(calls):
            self.replies[c.name] += 1
            record = _record(c.result)
            if record is not None:
                self.records[c.name] += 1
            if _acknowledges(record, c.result):
                self.acks[c.name] += 1
            ids = _values(c.arguments)
            if isinstance(record, dict):
                earlier = [read[v] for v in sorted(ids) if v in read]
                if any(tool != c.name and _same_record_changed(before, record) for tool, before in earlier):
                    self.changed[c.name] += 1
            for v in ids:  # the record this call addresses is now as its reply shows, or unknown
                if isinstance(record, dict) and may_read.get(c.name, True):
                    read[v] = (c.name, record)
                else:
                    read.pop(v, None)
            if not may_read.get(c.name, True) or record is None:
                continue
            key = c.name + "\x00" + json.dumps(c.arguments, sort_keys=True, default=str)
            if key in last:
                j, before = last[key]
                ids = _values(c.arguments)
                between = [b for b in calls[j + 1: i] if b.name != c.name]
                touching = {b.name for b in between if ids & _values(b.arguments)}
                acting = {b.name for b in between if b.arguments and not all(k in PROSE_ARGS for k in b.arguments)}
                if not touching and len(acting) == 1:
                    touching = acting  # the one call between that could have changed it
                if before != c.result:
                    self.changed.update(touching)
                else:
                    self.unchanged.update({b.name for b in between})
            last[key] = (i, c.result)

    def _unblocking(self, run: Run) -> None:
        """Count the one substantive call of another tool between a failed call and its unchanged, successful retry:
        nothing else can have changed what the retry met."""
        calls = run.agent_calls
        for i, c in enumerate(calls):
            if not c.error:
                continue
            j = next((j for j in range(i + 1, len(calls)) if calls[j].name == c.name
                      and calls[j].arguments == c.arguments), None)
            if j is None or calls[j].error:
                continue
            between = {b.name for b in calls[i + 1: j] if not b.error and b.name != c.name and b.arguments
                       and not all(k in PROSE_ARGS for k in b.arguments)}
            if len(between) == 1:
                self.unblocked.update(between)

    def strong(self, name: str) -> tuple[ToolKind, str] | None:
        """write when the tool changed a record: its reply is the record an earlier call about the same id returned,
        with a value changed, or a repeated read of the record after it returned something else; or when it made
        failed calls succeed unchanged (more often than identical reads around it returned the same)."""
        n = self.changed[name]
        if n:
            return "write", f"it changed the record it was given ({n} times)"
        return self.unblocking(name)

    def unblocking(self, name: str) -> tuple[ToolKind, str] | None:
        """write when the tool made failed calls succeed unchanged (more often than identical reads around it
        returned the same): evidence no description outweighs ("Verify the contact details" that a failed
        `add_joint_holder` waited for changed something)."""
        n = self.unblocked[name]
        if n >= MIN_UNBLOCKED and n > self.unchanged[name]:
            return "write", f"a failed call succeeded unchanged right after it ({n} times)"
        return None

    def acknowledged(self, name: str) -> tuple[ToolKind, str] | None:
        """write when at least 80% of the tool's replies acknowledge a change (see `_acknowledges`)."""
        if self.replies[name] and self.acks[name] >= 0.8 * self.replies[name]:
            return "write", "its replies acknowledge a change (\"credit requested\", \"success\": true)"
        return None

    def weak(self, name: str) -> tuple[ToolKind, str] | None:
        """For a tool nothing stronger speaks of: graded by the expected actions (write), seen between identical
        reads that did not change (read), replies that are records (read)."""
        if name in self.graded:
            return "write", "the expected actions grade it"
        if self.unchanged[name]:
            return "read", "identical reads around it returned the same"
        if (found := self.acknowledged(name)) is not None:
            return found
        if self.replies[name] and self.records[name] >= 0.8 * self.replies[name]:
            return "read", "its replies are records"
        return None


class ToolKinds(dict):
    """Tool name -> read / write / other, as a `DomainProfile` infers them, carrying the domain's hand-offs (the
    tools that pass the conversation to a person) for `trace_envs.trajectories.handoff.is_handoff`. A plain copy
    (`dict(kinds)`) keeps the kinds and knows of no hand-off: pass the profile's `kinds` itself."""

    def __init__(self, kinds: Mapping[str, str] | None = None, handoffs: Iterable[str] = ()) -> None:
        super().__init__(kinds or {})
        self.handoffs = frozenset(handoffs)

    def copy(self) -> "ToolKinds":
        return ToolKinds(self, self.handoffs)
