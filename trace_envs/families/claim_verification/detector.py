"""Detector of claim_verification: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import CallRef, Check, Order
from trace_envs.language.sentences import sentences
from trace_envs.language.values import text_mentions
from trace_envs.checks.trace import parse_result
from trace_envs.families.claim_verification.task import said_forms, words_of
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.runtime.phrases import key_noun, path_words
from trace_envs.runtime.records import get_path

MIN_CLAIM_RUNS = 2  # one user's claim is an anecdote, not a recurring reason for a write
MAX_VALUES = 8
OWNER_FIELDS = frozenset({"user_id", "customer_id", "account_id", "owner_id"})
# A value no sentence can be said to claim: yes/no flags are in half the sentences a person writes.
UNCLAIMABLE = frozenset({"yes", "no", "true", "false", "none", "null", "n/a"})
# An assertion about the user's own situation, as real users word one (tau-bench airline: "I'm a Gold member",
# "As a Gold member, I've ...", "my flight ... has been delayed", "my flight earlier this month was canceled"); the
# claimed value follows within a few words.
ASSERTS = r"(?:i'?m|i am|i was|i'?ve|i have|i|as an?|was|is|are|were|been|got|already|it'?s)"
# Words that make the value what the user asks for, not what they say is so ("I'd like business", "change to economy").
REQUESTS = frozenset({"want", "wants", "like", "need", "change", "changing", "upgrade", "upgrading", "switch", "book",
                      "prefer", "to", "into", "would", "could", "please", "if", "not", "never", "become", "make"})
_WORD = re.compile(r"[\w'-]+")
_CONDITIONAL = re.compile(r"\b(?:if|unless|whether|in case|when)\b")
_ASSERTS = re.compile(rf"\b{ASSERTS}\b")
_CLAUSE_BREAK = re.compile(r"[,;:]")


def _whose(key: str) -> str:
    """'their' for the user's own record (a user id's), else 'their invoice's'."""
    noun = key_noun(key)
    return "their" if key in OWNER_FIELDS or noun in ("user", "customer") else f"their {noun}'s"


def _read_before_write(read: str, write: str, key: str) -> Check:
    return Check(applies_if=[CallRef(tool=write)],
                 clauses=[Order(id="read_before_write", first=CallRef(tool=read), then=CallRef(tool=write), join=[key])])


def claimable(value: Any) -> bool:
    return isinstance(value, str) and len(value.strip()) >= 3 and value.strip().lower() not in UNCLAIMABLE


def claim_forms(path: str, values: list[Any]) -> dict[Any, str]:
    """How a user words a claim that the field at `path` holds each value: a string value as itself ("gold"), a
    flag that is set as the field's name ("paid", "overdue": "I already paid", "my loan is overdue"); values no
    sentence can be said to claim (yes/no strings, a flag that is not set) are left out."""
    out: dict[Any, str] = {}
    name = path_words(path).split(" ")[-1]
    for v in values:
        if isinstance(v, bool):
            if v and claimable(name):
                out[v] = name
        elif claimable(v):
            out[v] = str(v)
    return out


def claims_in(text: str, values: list[Any], forms: dict[Any, str] | None = None) -> list[Any]:
    """The values of `values` that a sentence of `text` asserts (not a question, not a request): one of the value's
    forms (`forms[value]`, default the value itself) within three words after an assertion ("I'm a Gold member",
    "has been delayed", "already paid"), with no word between them that makes it a wish ("I'd like to change to
    business")."""
    forms = forms or {}
    asked = tuple((v, forms.get(v, v)) for v in values)
    try:
        return list(_claims_of(text, tuple((type(v), type(f)) for v, f in asked), asked))
    except TypeError:  # an unhashable value or form: asked afresh
        return _claims(text, asked)


# Mining asks every user turn about each enum field's values, proposing and then labelling; the types keep True and 1
# apart.
@lru_cache(maxsize=16384)
def _claims_of(text: str, types: tuple[tuple[type, type], ...], asked: tuple[tuple[Any, Any], ...]) -> tuple[Any, ...]:
    return tuple(_claims(text, asked))


def _claims(text: str, asked: tuple[tuple[Any, Any], ...]) -> list[Any]:
    """The values of `asked` ((value, form) pairs) whose form a sentence of `text` asserts, first asserted first."""
    out = []
    for window in _assertion_windows(text):
        for v, form in asked:
            if v in out:
                continue
            n = _first_mention(form, window)
            if n and not REQUESTS.intersection(window[:n - 1]):
                out.append(v)
    return out


@lru_cache(maxsize=8192)  # mining asks this of every user turn once per enum field of every read it proposes from
def _assertion_windows(text: str) -> tuple[tuple[str, ...], ...]:
    """The (up to four) words after each assertion in `text`'s sentences that are neither questions nor suppositions,
    in the order they are said."""
    out = []
    for s in sentences(text):
        if s.rstrip().endswith("?"):
            continue
        low = s.lower()
        for m in _ASSERTS.finditer(low):
            if _CONDITIONAL.search(_CLAUSE_BREAK.split(low[:m.start()])[-1]):
                continue  # "if my line is suspended, restore it" supposes the value, it does not claim it
            out.append(tuple(_WORD.findall(low[m.end():])[:4]))
    return tuple(out)


def _first_mention(form: Any, window: tuple[str, ...]) -> int:
    """How many of `window`'s first words it takes to state `form` (0: none do)."""
    if isinstance(form, (str, int, float, bool)):
        return _first_scalar_mention(form, window)
    return _words_to_state(form, window)


# A few words after an assertion recur across runs, and every enum field's values are tried on them; typed, as True
# and 1 are not the same form.
@lru_cache(maxsize=65536, typed=True)
def _first_scalar_mention(form: str | int | float | bool, window: tuple[str, ...]) -> int:
    return _words_to_state(form, window)


def _words_to_state(form: Any, window: tuple[str, ...]) -> int:
    return next((n for n in range(1, len(window) + 1) if text_mentions(form, " ".join(window[:n]))), 0)


def user_claims(run: Any, values: list[Any], before: int | None = None, forms: dict[Any, str] | None = None
                ) -> list[Any]:
    """The values the user's turns (before message `before`) claim, first claimed first."""
    out: list[Any] = []
    for i, m in enumerate(run.messages):
        if before is not None and i >= before:
            break
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            out += [v for v in claims_in(m["content"], values, forms) if v not in out]
    return out


def _reads(run: Any, read: str, key: str | None, field: str) -> list[tuple[int, Any, Any]]:
    """(message index, key value, field value) of each successful `read` whose result holds `field`."""
    out = []
    for c in run.agent_calls:
        if c.name != read or c.error or not c.result:
            continue
        found, value = get_path(parse_result(c.result), field)
        if found:
            out.append((c.message_index, c.arguments.get(key) if key else None, value))
    return out


def claim_verdict(run: Any, read: str, write: str, key: str | None, field: str, values: list[Any],
                  forms: dict[Any, str] | None = None) -> Label | None:
    """PRESENT / LACKING of a run whose user claims a value of `field` (see the module docstring); None when it does
    not apply (no claim, or neither a write nor a read of the record after the claim). `forms`: how users word each
    value when the runs taught it (see `learned_forms`), else the values themselves."""
    writes = [c for c in run.agent_calls if c.name == write and not c.error]
    end = writes[0].message_index if writes else None
    forms = forms or claim_forms(field, values)
    claimed = user_claims(run, list(forms), end, forms)
    if not claimed:
        return None
    reads = _reads(run, read, key, field)
    if writes:
        w = writes[0]
        target = w.arguments.get(key) if key else None
        seen = [v for i, k, v in reads if i < w.message_index and (target is None or k == target)]
        if not seen:
            return "LACKING"  # written on the user's word alone
        return "PRESENT" if seen[-1] in claimed else "LACKING"
    told = [m.get("content") or "" for m in run.messages if m.get("role") == "assistant"]
    contradicted = [v for _, _, v in reads if v not in claimed]
    if contradicted and any(text_mentions(w, t) for w in said_forms(path_words(field), contradicted[-1]) for t in told):
        return "PRESENT"
    return None


def claimed_fields(ctx: ProposalContext, read: str, write: str, key: str
                   ) -> tuple[str, Any, list[Any], dict[Any, str] | None] | None:
    """The enum field of `read`'s records whose values users claim in at least MIN_CLAIM_RUNS runs that read such a
    record, at least one of them a claim the record contradicts and one followed by `write`; with the value claimed
    most often, every value seen (most seen first) and the forms learned from the runs (`learned_forms`) when the
    values' own words are never claimed. None when no field qualifies."""
    best = None
    for path, counts in sorted(ctx.index.enum_fields(read).items()):
        if path == key or path.split(".")[-1] in OWNER_FIELDS:
            continue
        values = [v for v, _ in counts.most_common(MAX_VALUES)]
        forms = claim_forms(path, values)
        if not forms or len(values) < 2 or not (len(forms) >= 2 or all(isinstance(v, bool) for v in values)):
            continue
        found = _claimed(ctx, read, write, key, path, forms)
        learned = None
        if found is None and (learned := learned_forms(ctx, read, write, key, path, values)):
            found = _claimed(ctx, read, write, key, path, learned)
        if found is not None and (best is None or found[0] > best[0]):
            shown = values if all(isinstance(v, bool) for v in values) else list(forms)
            best = (found[0], path, found[1], shown, learned)
    return best[1:] if best else None


def _claimed(ctx: ProposalContext, read: str, write: str, key: str, path: str, forms: dict[Any, str]
             ) -> tuple[int, Any] | None:
    """(runs whose user claims a value of `path` in `forms`' words, the value claimed most) when at least
    MIN_CLAIM_RUNS do, a record contradicts one claim and one claim is followed by `write`; else None."""
    claims: Counter = Counter()
    runs = contradicted = written = 0
    for run in ctx.runs:
        reads = _reads(run, read, key, path)
        made = [c.message_index for c in run.agent_calls if c.name == write and not c.error]
        said = user_claims(run, list(forms), made[0] if made else None, forms) if reads else []
        if not said:
            continue
        runs += 1
        claims.update(said)
        contradicted += any(v not in said for _, _, v in reads)
        written += bool(made)  # the claim came before the write: it is the write's reason
    if runs >= MIN_CLAIM_RUNS and contradicted and written:
        return runs, claims.most_common(1)[0][0]
    return None


# Words after an assertion that say nothing about a record's state.
_FILLER = frozenset({"a", "an", "the", "my", "our", "your", "this", "that", "it", "its", "on", "of", "for", "in", "to",
                     "and", "just", "also", "really", "still", "already", "been", "be", "have", "has", "had", "i",
                     "me", "we", "you", "so", "here", "there", "calling", "contacting", "writing", "trying",
                     "hoping", "looking", "sure", "glad", "happy", "sorry", "hi", "hello", "thanks", "customer",
                     "member", "told", "getting", "can", "will", "d", "ll", "m", "s", "re", "ve", "know", "provide",
                     "give", "see", "think", "got"}) | REQUESTS
LEARNED_SHARE = 0.5  # of the runs asserting something before the write, the share that must use the learned word


def learned_forms(ctx: ProposalContext, read: str, write: str, key: str, path: str, values: list[Any]
                  ) -> dict[Any, str] | None:
    """How users word a claim about `path` when they never say its values ("I already paid" of a payment status
    `received`), learned from the runs: the value the passed runs wrote on in nearly every case is what a user
    asking for `write` claims, and the claim's word is the one that opens the users' assertions (within two words)
    before the write in most runs that read such a record and made it, other than the records' and tools' own words
    and ids. None when the runs show no such value or word."""
    wrote_on: Counter = Counter()
    opened: Counter = Counter()
    asserting = 0
    own = set(re.findall(r"[a-z]+", " ".join([read, write, key, path]).lower()))
    for run in ctx.runs:
        reads = _reads(run, read, key, path)
        if not reads:
            continue
        made = [c for c in run.agent_calls if c.name == write and not c.error]
        if not made:
            continue  # what users say before other requests is not this write's reason
        if run.success:
            before = [v for i, _, v in reads if i < made[0].message_index]
            if before:
                wrote_on[_hashable(before[-1])] += 1
        end = made[0].message_index
        words: set[str] = set()
        for m in run.messages[:end]:
            if m.get("role") == "user" and isinstance(m.get("content"), str):
                for window in _assertion_windows(m["content"]):
                    words.update(w for w in window[:2] if w.isalpha() and w not in _FILLER and w not in own)
        if words:
            asserting += 1
            opened.update(words)
    if not wrote_on or not opened:
        return None
    value, n = wrote_on.most_common(1)[0]
    if n < 0.8 * sum(wrote_on.values()) or value not in [_hashable(v) for v in values] or not claimable(value):
        return None
    if not _gates(ctx.index.outcomes.get((read, write), {}).get(path) or {}, value):
        return None
    word, used = opened.most_common(1)[0]
    if used < max(MIN_CLAIM_RUNS, LEARNED_SHARE * asserting):
        return None
    return {value: word}


GATE_PURITY = 0.9  # the share of a value's records the passed runs treat alike (wrote, or read and left alone)


def _gates(outcomes: dict[Any, list[int]], value: Any) -> bool:
    """Whether the field gates the write in the passed runs (`ResultIndex.outcomes`: value -> [records written,
    records read and left alone though the user asked]): they wrote on `value` (nearly always) and left records of
    another value alone (nearly always), in at least MIN_CLAIM_RUNS records each. A claim's word is learned only for
    a field that decides the write; a word common to some request (a driver named in it) is no claim."""
    wrote, left = outcomes.get(value, [0, 0])
    if wrote < MIN_CLAIM_RUNS or wrote < GATE_PURITY * (wrote + left):
        return False
    others = [(w, lt) for v, (w, lt) in outcomes.items() if v != value and w + lt]
    return bool(others) and all(w <= (1 - GATE_PURITY) * (w + lt) for w, lt in others) and \
        sum(lt for _, lt in others) >= MIN_CLAIM_RUNS


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


class ClaimVerificationDetector(Detector):
    task = "claim_verification"
    teaches = ("unwarranted_write", "user_claim")
    # a write the record forbids, made on the user's word (a refusal), or made without reading the record first
    refines = ("policy_refusal", "precondition_before_write")

    def label(self, view, check: Check, args: dict[str, Any]) -> Label:
        read, write, key = args.get("read"), args.get("write"), args.get("key")
        values = list(args.get("values") or [])
        field = args.get("field")
        if not (read and write and field and values):
            return "NA"
        forms = {v: f for v, f in args.get("forms") or []} or None
        verdict = claim_verdict(view.run, read, write, key, field, values, forms)
        if verdict is None:
            return "NA"
        a = view.attribution
        if a is None:
            return verdict
        if a.of("missing_write", write):
            return "NA"  # the expected write was never made: a refusal or a stop, not a trusted claim
        if verdict == "LACKING" and not (a.of("unwarranted_write", write) or a.of("user_claim", write)):
            return "NA"  # the expected actions make this write: the contradicted claim did not decide it
        return verdict

    def portable_check(self, roles: dict[str, str]) -> tuple[Check, dict[str, Any]] | None:
        return None  # the field a claim is about is known only from the runs' user turns (see `propose`)

    def propose(self, ctx: ProposalContext) -> list[Proposal]:
        out = []
        for (r, w, k), _ in sorted(ctx.pairs.items(), key=lambda x: (-x[1], x[0])):
            if w not in ctx.writes or r not in ctx.reads or k in FREE_TEXT_ARGS:
                continue
            found = claimed_fields(ctx, r, w, k)
            if not found:
                continue
            field, claimed, values, learned = found
            refuted = [v for v in values if v != claimed]
            label = path_words(field)
            out.append(Proposal(
                name=f"verify_{label.replace(' ', '_')}_claim_before_{w}",
                description=f"When the user says {_whose(k)} {label} is {words_of(claimed)} to justify {w}, look "
                f"the record up with {r} first; call {w} only when the record agrees, and otherwise tell the user "
                "what the record shows and change nothing.",
                roles={"read": r, "write": w, "key": k},
                label_check=_read_before_write(r, w, k),
                label_args={"read": r, "write": w, "key": k, "field": field, "values": values,
                            **({"forms": [[v, f] for v, f in learned.items()]} if learned else {})},
                params={"field": field, "claimed": claimed, "refuted": refuted, "label": label},
            ))
        return out

    def infer_params(self, roles: dict[str, str], index, policy: str = "", rules: Any = None
                     ) -> tuple[dict[str, Any], str]:
        """Without the runs' user turns (an LLM's proposal): the record's enum field the policy names, the value it
        names first as the claim."""
        key = roles.get("key", "")
        lowered = policy.lower().replace("_", " ")
        for path, counts in sorted(index.enum_fields(roles.get("read", "")).items()):
            values = [str(v) for v, _ in counts.most_common() if claimable(v)]
            if path == key or path.split(".")[-1] in OWNER_FIELDS or len(values) < 2:
                continue
            found = [(m.start(), v) for v in values
                     if (m := re.search(rf"\b{re.escape(words_of(v).lower())}\b", lowered))]
            if found:
                claimed = min(found)[1]
                params = {"field": path, "claimed": claimed, "refuted": [v for v in values if v != claimed],
                          "label": path_words(path)}
                return params, f" The user claims the {path_words(path)} is {words_of(claimed)}."
        return {}, ""

    def target_tools(self, roles: dict[str, str]) -> list[str]:
        return [roles[k] for k in ("read", "write") if roles.get(k)]


register_detector(ClaimVerificationDetector())
