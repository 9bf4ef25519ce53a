"""Detector of answer_from_records: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import CallMade, CallRef, Check
from trace_envs.language.questions import asks_for_an_action
from trace_envs.language.sentences import sentences
from trace_envs.language.values import text_mentions
from trace_envs.checks.trace import read_result
from trace_envs.families.answer_from_records.task import told_check, tellable
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.runtime.phrases import path_words
from trace_envs.runtime.records import get_path
from trace_envs.runtime.world import words
from trace_envs.trajectories.results import ResultIndex, items_at

MIN_ASKING_RUNS = 2  # a field one user asked about once is no recurring question
MAX_FIELDS = 4
MAX_DEPTH = 6
# A question, as real users put one: a question mark, an interrogative opening, or "tell me / let me know ...".
QUESTION = re.compile(
    r"\?\s*$|^\W*(?:hi\W+|hello\W+|also\W+|and\W+|so\W+)?(?:what|which|when|where|how|is|are|does|do|did|was|were|"
    r"can you|could you|would you|will you)\b|\b(?:tell me|let me know|like to know|want to know|wondering|"
    r"remind me)\b|\bI(?: really| just)? (?:need|want|would like|'d like) (?:to (?:know|check|find out|get|see) )?"
    r"(?:the|my|what|which|how|when)\b",
    re.IGNORECASE,
)
_ID_SEGMENT = re.compile(r"\d{3}")  # a key with an id in it: one user's payment method, one product's variant
OWNER_FIELDS = frozenset({"user_id", "customer_id", "account_id", "owner_id"})


def field_words(path: str) -> str:
    """The words a user names a field by: its last named segment (`flights.0.date` -> `date`, `nextReading` ->
    `next reading`)."""
    named = [p for p in path.split(".") if not p.isdigit()]
    return words(named[-1] if named else path)


def _field_pattern(path: str) -> str:
    """The field's words as a regex, a word allowed between two of them ("next meter reading" for `nextReading`); an
    id is also called a number ("tracking id" ~ "tracking number")."""
    said = field_words(path)
    forms = [said] + ([said[:-3] + " number"] if said.endswith(" id") else [])
    return "(?:" + "|".join(r"[\s_-]+(?:\w+\s+)?".join(map(re.escape, f.split())) for f in forms) + ")"


def asks_about(texts: list[str], path: str) -> bool:
    """Whether one of the user's `texts` holds a question (see QUESTION) that asks for the field at `path`: its
    words after "the", a question word ("what", "which", "how much", ...) or "my <word>" ("the status of my order",
    "what date", "my flight date"), never right after "my" ("my name and zip code" hands them over), and not in a
    question that asks the agent to act ("Could you move the contract ...?": `asks_for_an_action`)."""
    asked = _asking(path)
    return any(asked.search(s) for t in texts for s in _questions(t))


@lru_cache(maxsize=1024)  # one per field the miner tries: every read result's askable leaf
def _asking(path: str) -> re.Pattern[str]:
    return re.compile(
        rf"\b(?:(?:the|what|what's|whats|which|how much|how many|when|is|are)\s+(?:\w+\s+){{0,2}}"
        rf"|my\s+(?!and\b|or\b)\w+\s+){_field_pattern(path)}s?\b",
        re.IGNORECASE,
    )


@lru_cache(maxsize=8192)  # every user turn is searched once per field of every read the miner tries
def _questions(text: str) -> tuple[str, ...]:
    """The sentences of `text` that are questions (see QUESTION) for information, not requests to act."""
    return tuple(s for s in sentences(text) if QUESTION.search(s) and not asks_for_an_action(s))


def askable(path: str, key: str, record: Any = None) -> bool:
    """A field a user could ask for: not the key, nor the record's owner, nor under an id-like key
    (`payment_methods.credit_card_7815826.id`), nor a search's options (a result that is a list); an item of a list
    of plain values only when the list in `record` holds that one value (an order's tracking id)."""
    parts = path.split(".")
    if path == key or parts[-1] in OWNER_FIELDS or _ID_SEGMENT.search(path) or parts[0].isdigit():
        return False
    if parts[-1].isdigit():
        found, items = get_path(record, ".".join(parts[:-1])) if record is not None else (False, None)
        return found and isinstance(items, list) and len(items) == 1
    return True


def _read_made(read: str) -> Check:
    return Check(applies_if=[CallRef(tool=read)], clauses=[CallMade(id="read_made", call=CallRef(tool=read))])


def asked_values(run: Any, tool: str, key: str | None, fields: list[str] | None = None,
                 lists: tuple[str, str] | list[str] | None = None) -> list[tuple[Any, str, Any]]:
    """(key value, field, value) for each value a successful `tool` result of `run` holds at a field (of `fields`, or
    any askable one) that a user question of the run names, when the user had not said the value themselves (a user
    who gives their zip code is not asking for it).

    For a read that lists the owner's records (`lists`: (list path, id field), `ResultIndex.listed`), the fields are
    the listed records' own, on the record the user named by its id (the key value): "what is the start date of
    leave request LR-44452?" asks about that one, not the list's first."""
    users = [m["content"] for m in run.messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
    if not any(_questions(t) for t in users):
        return []  # no user question asks for any field (`asks_about`): most runs, whose records are not walked
    heard = "\n".join(users)
    asked: dict[str, bool] = {}
    out = []
    for c in run.agent_calls:
        if c.name != tool or c.error or not c.result:
            continue
        parsed = read_result(c.result)
        if lists:
            records = [(item.get(lists[1]), item) for item in items_at(parsed, lists[0])
                       if isinstance(item.get(lists[1]), str) and text_mentions(item.get(lists[1]), heard)]
        else:
            records = [(c.arguments.get(key) if key else None, parsed)]
        for rid, record in records:
            for path, value in leaf_paths(record).items():
                if ((fields is not None and path not in fields) or not tellable(value)
                        or not askable(path, key or "", record)):
                    continue
                if path not in asked:
                    asked[path] = asks_about(users, path)
                if asked[path] and not text_mentions(value, heard):
                    out.append((rid, path, value))
    return out


def leaf_paths(value: Any, prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Dotted paths to the scalar leaves of a record, lists by their first item, as deep as an order's
    `fulfillments.0.tracking_id.0` (`ResultIndex.flatten` stops above it)."""
    if depth > MAX_DEPTH:
        return {}
    if isinstance(value, dict):
        return {p: v for k, x in value.items() if isinstance(k, str)
                for p, v in leaf_paths(x, f"{prefix}{k}.", depth + 1).items()}
    if isinstance(value, list):
        return leaf_paths(value[0], f"{prefix}0.", depth + 1) if value else {}
    return {prefix[:-1]: value} if prefix and value is not None else {}


def asked_fields(ctx: ProposalContext, read: str, key: str, lists: tuple[str, str] | None = None) -> list[str]:
    """The fields of `read`'s results (of its listed records, with `lists`) that users ask for (see `asked_values`)
    in at least MIN_ASKING_RUNS runs, most asked first."""
    counts = Counter(p for run in ctx.runs for p in {p for _, p, _ in asked_values(run, read, key, lists=lists)})
    return [p for p, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])) if n >= MIN_ASKING_RUNS][:MAX_FIELDS]


def listing_words(paths: list[str]) -> str:
    names = list(dict.fromkeys(f"the {path_words(p)}" for p in paths))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


class AnswerFromRecordsDetector(Detector):
    task = "answer_from_records"
    teaches = ("said",)

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        tool, key, fields, lists = args.get("tool"), args.get("key"), args.get("fields"), args.get("lists")
        if tool not in view.called:
            return "NA"
        held = asked_values(view.run, tool, key, fields, lists)
        if not held:
            return "NA"
        for rid, _, value in held:
            # a listing read takes the owner's id, not the listed record's
            read = CallRef(tool=tool, args={key: rid}) if key and rid is not None and not lists else CallRef(tool=tool)
            if told_check(tool, key, read, value, penalties=False).evaluate(view.trace).passed:
                return "PRESENT"
        a = view.attribution
        if a is None:  # no expected actions: the portable check, which the run failed
            return "LACKING"
        return "LACKING" if not a.success and a.kinds == {"said"} else "NA"

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        r, k = roles.get("read"), roles.get("key")
        # the fields users ask about are not known here: any askable field of the record counts
        return (_read_made(r), {"tool": r, "key": k, "fields": None}) if r and k else None

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for r in ctx.reads:
            lists = ctx.index.listed.get(r)  # a listing read: the records are the list's items, keyed by their ids
            k = lists[1] if lists else next((a for a in ctx.args(r) if a not in FREE_TEXT_ARGS), None)
            fields = asked_fields(ctx, r, k, lists) if k else []
            if not k or not fields:
                continue
            top = fields[0]
            out.append(Proposal(
                name=f"tell_{field_words(top).replace(' ', '_')}_after_{r}",
                description=f"When the user asks for {listing_words(fields)} of one of their records, look it up "
                f"with {r} and tell the user the value in a sentence; never read the answer and leave it unsaid, and "
                "never paste the record.",
                roles={"read": r, "key": k},
                label_check=_read_made(r),
                label_args={"tool": r, "key": k, "fields": fields, "lists": list(lists) if lists else None},
                params={"field": top, "label": path_words(top)},
            ))
        return out

    def infer_params(self, roles: dict[str, str], index: ResultIndex, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        key = roles.get("key", "")
        fields = index.fields.get(roles.get("read", ""), {})
        # a field with a few recurring values (a status, a cabin) before free values, then the most seen
        ranked = sorted(
            (p for p, values in fields.items()
             if askable(p, key) and len(values) >= 2 and all(tellable(v) for v in values)),
            key=lambda p: (len(fields[p]) > 8, -sum(fields[p].values()), p),
        )
        field = ranked[0] if ranked else "status"
        return {"field": field, "label": path_words(field)}, f" The user asks for the {path_words(field)}."

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles["read"]] if roles.get("read") else []


register_detector(AnswerFromRecordsDetector())
