"""Detector of claim_verification: how the miner finds it in real runs (see task.py for the env)."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

from trace_envs.checks.attribution import FREE_TEXT_ARGS
from trace_envs.checks.clauses import CallRef, Check, Order
from trace_envs.language.sentences import sentences
from trace_envs.language.values import might_state, text_mentions
from trace_envs.checks.trace import read_result
from trace_envs.families.claim_verification.task import said_forms, words_of
from trace_envs.mining.detector import Detector, Label, Proposal, ProposalContext, register_detector
from trace_envs.language.words import FUNCTION_WORDS, tool_words, verb_synonyms
from trace_envs.runtime.phrases import key_noun, path_words
from trace_envs.runtime.world import words as spoken
from trace_envs.runtime.records import get_path
from trace_envs.trajectories.results import asks_for, items_at, outcome_gate, plain_words, run_user_text

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
WINDOW = 10  # words after an assertion a claimed value may come in ("... from rental R1 with a full tank")
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
    if not _assertion_windows(text):
        return []  # no sentence asserts anything: half the users' turns (requests, questions, thanks)
    forms = forms or {}
    # a value none of whose forms the text can state is claimed by none of its sentences: most turns name no value
    asked = tuple((v, f) for v, f in ((v, forms.get(v, v)) for v in values) if might_state(f, text))
    if not asked:
        return []
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
    """The words after each assertion in `text`'s sentences that are neither questions nor suppositions, to the end
    of its clause and at most WINDOW of them ("I already returned the car from rental R1 with a full tank"), in the
    order they are said."""
    out = []
    for s in sentences(text):
        if s.rstrip().endswith("?"):
            continue
        low = s.lower()
        for m in _ASSERTS.finditer(low):
            if _CONDITIONAL.search(_CLAUSE_BREAK.split(low[:m.start()])[-1]):
                continue  # "if my line is suspended, restore it" supposes the value, it does not claim it
            out.append(tuple(_WORD.findall(_CLAUSE_BREAK.split(low[m.end():])[0])[:WINDOW]))
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
    # A form stated by some first words is stated by all of them (whole words stay whole as words are added), so the
    # whole window answers first: most forms are in none of it, and those pay one search instead of one per prefix.
    if not window or not text_mentions(form, " ".join(window)):
        return 0
    return next((n for n in range(1, len(window) + 1) if text_mentions(form, " ".join(window[:n]))), 0)


def user_claims(run: Any, values: list[Any], before: int | None = None, forms: dict[Any, str] | None = None,
                turns: list[tuple[int, str]] | None = None) -> list[Any]:
    """The values the user's turns (before message `before`) claim, first claimed first. `turns`: the run's
    `asserting_turns`, when the caller has them."""
    out: list[Any] = []
    for i, text in asserting_turns(run) if turns is None else turns:
        if before is not None and i >= before:
            break
        out += [v for v in claims_in(text, values, forms) if v not in out]
    return out


def asserting_turns(run: Any) -> list[tuple[int, str]]:
    """(message index, text) of the user's turns that assert something (`_assertion_windows`): where a claim can be."""
    return [(i, m["content"]) for i, m in enumerate(run.messages)
            if m.get("role") == "user" and isinstance(m.get("content"), str) and _assertion_windows(m["content"])]


def _reads(run: Any, read: str, key: str | None, field: str, lists: tuple[str, str] | list[str] | None = None
           ) -> list[tuple[int, Any, Any]]:
    """(message index, key value, field value) of each successful `read` whose result holds `field`; for a read that
    lists the owner's records (`lists`: (list path, id field), `ResultIndex.listed`), one per listed record, keyed by
    its own id and `field` a path within it."""
    return _field_reads(_read_results(run, read), key, field, lists)


def _read_results(run: Any, read: str) -> list[tuple[int, dict[str, Any], Any]]:
    """(message index, arguments, parsed result) of each successful `read` of `run` with a result."""
    return [(c.message_index, c.arguments, read_result(c.result)) for c in run.agent_calls
            if c.name == read and not c.error and c.result]


def _field_reads(results: list[tuple[int, dict[str, Any], Any]], key: str | None, field: str,
                 lists: tuple[str, str] | list[str] | None = None) -> list[tuple[int, Any, Any]]:
    """`_reads` of the `_read_results` of a run."""
    out = []
    for index, arguments, parsed in results:
        if lists:
            for item in items_at(parsed, lists[0]):
                found, value = get_path(item, field)
                if found and isinstance(item.get(lists[1]), str):
                    out.append((index, item[lists[1]], value))
            continue
        found, value = get_path(parsed, field)
        if found:
            out.append((index, arguments.get(key) if key else None, value))
    return out


def claim_verdict(run: Any, read: str, write: str, key: str | None, field: str, values: list[Any],
                  lists: tuple[str, str] | list[str] | None = None, claim_words: list[str] | None = None
                  ) -> Label | None:
    """PRESENT / LACKING of a run whose user claims a value of `field` (see the module docstring); None when it does
    not apply (no claim, or neither a write nor a read of the record after the claim)."""
    writes = [c for c in run.agent_calls if c.name == write and not c.error]
    end = writes[0].message_index if writes else None
    if claim_words:  # a paraphrased claim stands for the first value (see `paraphrased_claim`)
        claimed = values[:1] if says_claim(run, claim_words, end) else []
    else:
        forms = claim_forms(field, values)
        claimed = user_claims(run, list(forms), end, forms)
    if not claimed:
        return None
    reads = _reads(run, read, key, field, lists)
    if lists:
        reads = _named(run, reads)
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


def _named(run: Any, reads: list[tuple[int, Any, Any]]) -> list[tuple[int, Any, Any]]:
    """The listed records of `reads` the run is about: those a call took the id of or the user named (all of them when
    none is); the rest of the owner's list was never asked about."""
    said = run_user_text(run)
    addressed = {v for c in run.agent_calls for v in c.arguments.values() if isinstance(v, str)}
    named = [r for r in reads if isinstance(r[1], str) and (r[1] in addressed or r[1].lower() in said)]
    return named or reads


def claimed_fields(ctx: ProposalContext, read: str, write: str, key: str) -> tuple[str, str, list[str]] | None:
    """The enum field of `read`'s records whose values users claim in at least MIN_CLAIM_RUNS runs that read such a
    record, at least one of them a claim the record contradicts and one followed by `write`; with the value claimed
    most often and every value seen (most seen first). None when no field qualifies. Of several, the field that
    separates the records the passed runs wrote from those they left alone (`outcome_gate`: what decided the write
    when the claim was checked), then the one claimed in most runs."""
    lists = ctx.index.listed.get(read)
    gate = outcome_gate(ctx.index, read, write)
    best = None
    reading = None  # the runs that read such a record and assert something, each read parsed once for every field
    for path, counts in sorted(ctx.index.enum_fields(read).items()):
        if path == key or path.split(".")[-1] in OWNER_FIELDS or (lists and path.startswith(f"{lists[0]}.")):
            continue
        values = [v for v, _ in counts.most_common(MAX_VALUES)]
        forms = claim_forms(path, values)
        if not forms or len(values) < 2 or not (len(forms) >= 2 or all(isinstance(v, bool) for v in values)):
            continue
        if reading is None:
            reading = [(run, results, _first_write(run, write), turns) for run in ctx.runs
                       for turns in [asserting_turns(run)] if turns for results in [_read_results(run, read)] if results]
        claims: Counter = Counter()
        runs = contradicted = written = 0
        for run, results, made, turns in reading:
            reads = _field_reads(results, key, path, lists)
            said = user_claims(run, list(forms), made, forms, turns) if reads else []
            if not said:
                continue
            runs += 1
            claims.update(said)
            contradicted += any(v not in said for _, _, v in (_named(run, reads) if lists else reads))
            written += made is not None  # the claim came before the write: it is the write's reason
        rank = (gate is not None and gate["field"] == path, runs)
        if runs >= MIN_CLAIM_RUNS and contradicted and written and (best is None or rank > best[0]):
            shown = values if all(isinstance(v, bool) for v in values) else list(forms)
            best = (rank, path, claims.most_common(1)[0][0], shown)
    return best[1:] if best else None


def asserted_words(run: Any, before: int | None = None) -> set[str]:
    """The content words the user's turns (before message `before`) assert: those after an assertion, up to the
    first that makes it a wish ("I already paid the overdue premium" -> paid, overdue, premium); no ids."""
    out: set[str] = set()
    for i, m in enumerate(run.messages):
        if before is not None and i >= before:
            break
        if m.get("role") != "user" or not isinstance(m.get("content"), str):
            continue
        for window in _assertion_windows(m["content"]):
            for w in window:
                if w in REQUESTS:
                    break
                if w.isalpha() and len(w) >= 3 and w not in FUNCTION_WORDS and not _ASSERTS.fullmatch(w):
                    out.add(w)
    return out


def says_claim(run: Any, claim_words: list[str], before: int | None = None) -> bool:
    """Whether the user's turns (before message `before`) assert at least half of `claim_words`."""
    return _holds_claim(asserted_words(run, before), claim_words)


def _holds_claim(asserted: set[str], claim_words: list[str]) -> bool:
    return sum(w in asserted for w in claim_words) * 2 >= len(claim_words)


def _first_write(run: Any, write: str) -> int | None:
    return next((c.message_index for c in run.agent_calls if c.name == write and not c.error), None)


def paraphrased_claim(ctx: ProposalContext, read: str, write: str, key: str
                      ) -> tuple[str, str, list[Any], list[str]] | None:
    """A claim users word their own way ("I already paid the overdue premium" for a payment status `received`),
    learned from what the runs did after it: the field that separates the records passed runs wrote from those they
    left alone (`outcome_gate`), and the words users assert, whatever that field holds, in the runs that read such a
    record and ask for `write` (said in at least MIN_CLAIM_RUNS of them, in half of them or more, and at least
    three times as often as in the runs that do not ask for it; the words of the write and its arguments are the
    request, not the claim). The claim stands for the field's allowed value: (field, claimed value, refuted values,
    claim words); None without a gate, where users name the field's values in a quarter of those runs or more (a
    condition, or a claim `claimed_fields` reads), without two such words, or when no claimed record contradicts it
    or no claim is followed by the write."""
    gate = outcome_gate(ctx.index, read, write)
    if gate is None or len(gate["allowed"]) != 1:
        return None
    lists = ctx.index.listed.get(read)
    # the write's own words and those of what it takes ("as a joint holder (holder name: Ana Petrov)" for
    # `joint_holders.add(holder_name)`) are the request, not a claim; singular or plural alike
    its_words = [*tool_words(write), *verb_synonyms(write), *(w for a in ctx.args(write) for w in spoken(a).split())]
    request = {w.lower().removesuffix("s") for w in its_words}
    values = [*gate["allowed"], *gate["blocked"]]
    vocab = ctx.index.asked_words.get(write, [])
    said_asked: Counter = Counter()
    said_other: Counter = Counter()  # in the runs that never ask for the write
    asked = others = named = 0
    seen = []  # (run, its first write, the words its user asserted before it)
    for run in ctx.runs:
        made = _first_write(run, write)
        words = asserted_words(run, made)
        seen.append((run, made, words))
        text = run_user_text(run)
        # asked for the write as `ResultIndex` counts a passed run that left the record alone
        if not (made is not None or asks_for(write, text, plain_words(text), vocab)):
            others += 1
            said_other.update(words)
        elif _reads(run, read, key, gate["field"], lists):
            asked += 1
            said_asked.update(words)
            named += any(isinstance(v, str) and text_mentions(v, text) for v in values)
    if not asked or named * 4 > asked:
        return None  # users name the field's values ("if my line is suspended"): a condition or a worded claim
    # against the runs that ask for something else: the claim's task may be a third of the domain's runs
    lift = {w: (n / asked) / ((said_other[w] + 1) / (others + 1)) for w, n in said_asked.items()
            if n >= MIN_CLAIM_RUNS and n * 2 >= asked and w.removesuffix("s") not in request}
    claim_words = sorted((w for w, x in lift.items() if x >= 3), key=lambda w: (-said_asked[w], w))[:4]
    if len(claim_words) < 2:
        return None
    claimed, refuted = gate["allowed"][0], list(gate["blocked"])
    contradicted = written = 0
    for run, made, words in seen:
        if not _holds_claim(words, claim_words):
            continue
        reads = _reads(run, read, key, gate["field"], lists)
        contradicted += any(v != claimed for _, _, v in (_named(run, reads) if lists else reads))
        written += made is not None
    if not (contradicted and written):
        return None
    return gate["field"], claimed, [claimed, *refuted], claim_words


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
        verdict = claim_verdict(view.run, read, write, key, field, values, args.get("lists"), args.get("claim_words"))
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
            claim_words: list[str] = []
            if found is None and (said := paraphrased_claim(ctx, r, w, k)) is not None:
                field, claimed, values, claim_words = said
                found = field, claimed, values
            if not found:
                continue
            field, claimed, values = found
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
                            "lists": ctx.index.listed.get(r), **({"claim_words": claim_words} if claim_words else {})},
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
