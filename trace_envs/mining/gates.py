"""Which record field a write turns on, learned from the rules or the runs and checked against the policy text.

A gate is `{"field": dotted path, "allowed": [...], "blocked": [...]}`: the write is allowed only when the record's
field holds an allowed value. Several detectors infer one (a precondition, a refusal, a completion with a forbidden
request, a hand-off); the miner's learned rules use `policy_support` to keep only gates the shown policy states.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from trace_envs.language.patterns import word_pattern
from trace_envs.language.refusals import ALLOWS_ONLY, NEGATION, RESTRICTS
from trace_envs.language.words import policy_nouns, verb_synonyms
from trace_envs.trajectories.results import ResultIndex, gate_candidates, judged_gate, outcome_gate


def infer_gate(roles: dict[str, str], index: ResultIndex, policy: str, rules: Any = None) -> tuple[dict[str, Any], str]:
    """The record field (and its allowed / blocked values) a write turns on: from the domain's rules when they name
    one for the write, else as the passed runs show it when the policy names that field or its values; no params
    otherwise (a rule the agent is never shown cannot be checked)."""
    read, write, key = roles.get("read", ""), roles.get("write", ""), roles.get("key", "")
    gate = rules_gate(rules, write, index.enum_fields(read)) if rules is not None else None
    source = " (a domain rule: a --rules file, or the runs where the policy states it)"
    if gate is None:
        # What the runs show, checked against the policy: a field whose value a policy sentence names together with
        # the write's action ("Basic economy flights cannot be modified") before one the policy only mentions
        # somewhere ("insurance"); the passed runs' shift, then the warranted / unwarranted writes' split, decide ties.
        found = [*gate_candidates(index, read, write, key),
                 *filter(None, [judged_gate(index, read, write, key), outcome_gate(index, read, write)])]
        said = index.asked_words.get(write, [])
        backed = [(policy_support(policy, g, write, said), -i, g) for i, g in enumerate(found)]
        why_not = ""
        # the best backed gate the runs do not contradict: a field that merely shifted (a section, a course) may rank
        # above the one the passed runs wrote and held back on
        for _, _, found_gate in sorted(((s, i, g) for s, i, g in backed if s), key=lambda t: t[:2], reverse=True):
            gate = as_the_policy_says(found_gate, policy, write)
            wrote, held = gate_evidence(index, read, write, key, gate)
            stated = policy_support(policy, gate, write, said) >= 2
            contradicted = gate_contradicted(index, read, write, key, gate)
            if not stated and contradicted >= CONTRADICTED_MIN \
                    and contradicted > CONTRADICTED_SHARE * (wrote + contradicted):
                continue  # the passed runs wrote on the blocked side too: no gate the runs show
            if not stated and not held:
                # Only a shift in the values read before writes, which whatever else set tasks apart (the users who
                # declined a confirmation) makes too: no run ever held back on the blocked side.
                continue
            beyond = [] if stated else other_conditions(policy, write, gate, index.enum_fields(read))
            if beyond:
                # The policy's own section on the write turns on other values too ("It is a business flight" among
                # the cases that allow a cancellation): a gate on this field alone would block what the policy allows.
                why_not = (f"the runs show {gate['field']} deciding {write}, but the policy's section on it also names "
                           f"{', '.join(f'{f} {v}' for f, v in beyond)}, which the runs cannot weigh; state the rule "
                           "with --rules FILE (see examples/rules/)")
                continue
            break
        else:
            return {}, why_not
        source = (f" (learned from the runs: {wrote} write(s) by passed runs on an allowed value, {held} record(s) "
                  "with a blocked value left alone by passed runs or written against the expected actions; the policy "
                  + ("states it" if stated else "names the field or its values, in no sentence about this write")
                  + ")")
        if not stated and held < WEAK_BELOW:
            source += f"; {WEAK_EVIDENCE}: check it, or state the rule with --rules FILE (see examples/rules/)"
    return gate, f" {GATE_NOTE} {gate['field']} is {' or '.join(map(str, gate['allowed']))}{source}."


GATE_NOTE = "The write is allowed only when"  # the capability's description states its gate after these words
WEAK_EVIDENCE = "weak evidence"
WEAK_BELOW = 3  # records on the blocked side under which a gate the policy does not state is flagged
# A gate the policy does not state is no gate when more than this share of the passed runs' writes took a record on its
# blocked side (a field that merely shifted between the branches of a conditional, or between declined confirmations).
CONTRADICTED_SHARE = 0.2
CONTRADICTED_MIN = 3  # fewer such writes are what a disjunctive rule's other branch (a business-class cancel) leaves


def gate_evidence(index: ResultIndex, read: str, write: str, key: str, gate: dict[str, Any]) -> tuple[int, int]:
    """The runs on each side of a learned gate: (writes passed runs made on a record with an allowed value, records
    with a blocked value that passed runs read and left alone or that writes the expected actions do not make took)."""
    field = gate["field"]
    allowed, blocked = set(map(str, gate["allowed"])), set(map(str, gate["blocked"]))
    before = index.before_write.get((read, write, key), {}).get(field, {})
    outcomes = index.outcomes.get((read, write), {}).get(field, {})
    judged = index.judged.get((read, write, key), {}).get(field, {})
    wrote = max(sum(n for v, n in before.items() if str(v) in allowed),
                sum(c[0] for v, c in outcomes.items() if str(v) in allowed))
    held = sum(c[1] for v, c in outcomes.items() if str(v) in blocked) + \
        sum(c[1] for v, c in judged.items() if str(v) in blocked)
    return wrote, held


def gate_contradicted(index: ResultIndex, read: str, write: str, key: str, gate: dict[str, Any]) -> int:
    """Writes passed runs made on a record with a blocked value: what a gate the runs really show never has."""
    blocked = set(map(str, gate["blocked"]))
    before = index.before_write.get((read, write, key), {}).get(gate["field"], {})
    outcomes = index.outcomes.get((read, write), {}).get(gate["field"], {})
    return max(sum(n for v, n in before.items() if str(v) in blocked),
               sum(c[0] for v, c in outcomes.items() if str(v) in blocked))


def other_conditions(policy: str, write: str, gate: dict[str, Any], fields: dict[str, Counter]) -> list[tuple[str, str]]:
    """(field, value) for each value of the read's other closed-set fields that the policy's section on `write` names
    (under a heading with the write's verb: "## Cancel flight ... - It is a business flight"): conditions of the rule
    beyond the gate's own field. Yes / no values are left out, as everywhere here."""
    section = _section_about(policy, write)
    if not section:
        return []
    out = []
    for field, values in fields.items():
        if field == gate["field"]:
            continue
        for raw, _ in _named_values(section, [v for v in values if isinstance(v, str)]):
            if (field, raw) not in out:
                out.append((field, raw))
    return out


def _section_about(policy: str, write: str) -> str:
    """The text under the policy's markdown headings that name the write's action, to the next heading of the same or
    a higher level; lower-cased with underscores as spaces, as `_named_values` reads it."""
    action = re.compile(word_pattern(list(verb_synonyms(write))), re.I)
    out: list[str] = []
    level = 0  # the level of the heading whose section is being read, 0 outside one
    for line in policy.splitlines():
        heading = re.match(r"\s*(#+)\s+(.*)", line)
        if heading:
            depth = len(heading.group(1))
            if level and depth <= level:
                level = 0
            if not level and action.search(heading.group(2)):
                level = depth
            continue
        if level:
            out.append(line)
    return "\n".join(out).lower().replace("_", " ")


def as_the_policy_says(gate: dict[str, Any], policy: str, write: str) -> dict[str, Any]:
    """A gate learned from runs, held to the policy text: where a policy sentence forbids some of its blocked values
    for the write ("Basic economy flights cannot be modified"), the blocked values no such sentence names move to the
    allowed side (a gate learned from a handful of runs that also blocked economy would punish an agent following the
    policy to the letter). Values are matched longest first, so "economy" inside "basic economy" is not named."""
    named = forbidden_values(policy, gate["blocked"], gate["allowed"], write)
    if not named or len(named) == len(gate["blocked"]):
        return gate
    moved = [v for v in gate["blocked"] if v not in named]
    return {**gate, "allowed": sorted([*gate["allowed"], *moved], key=str), "blocked": named}


def forbidden_values(policy: str, blocked: list[Any], allowed: list[Any], write: str) -> list[Any]:
    """The values of `blocked` that a policy sentence names together with the write's action and a negation or a
    condition ("cannot be modified", "can be cancelled only if")."""
    action = re.compile(word_pattern(list(verb_synonyms(write))), re.I)
    out: list[Any] = []
    for sentence in _sentences(policy):
        if not action.search(sentence) or not RESTRICTS.search(sentence):
            continue
        for raw, _ in _named_values(sentence, [*blocked, *allowed]):
            value = next((v for v in blocked if str(v) == raw), None)
            if value is not None and value not in out:
                out.append(value)
    return out


def _sentences(policy: str) -> list[str]:
    return re.split(r"(?<=[.!?:])\s+|\n+", policy.lower().replace("_", " "))


def _named_values(sentence: str, values: list[Any]) -> list[tuple[str, int]]:
    """(value, where) for each value a sentence names, longest first so that "economy" inside "basic economy" is not
    named; yes / no and values under three letters are left out (any sentence may hold them)."""
    phrases = sorted({str(v): str(v).lower().replace("_", " ") for v in values}.items(), key=lambda kv: -len(kv[1]))
    taken: list[tuple[int, int]] = []
    out: list[tuple[str, int]] = []
    for raw, phrase in phrases:
        if len(phrase) < 3 or phrase in GENERIC_VALUES:
            continue
        for m in re.finditer(rf"\b{re.escape(phrase)}\b", sentence):
            if not any(a <= m.start() < b for a, b in taken):
                taken.append(m.span())
                out.append((raw, m.start()))
    return out


def allows_other_values(sentence: str, gate: dict[str, Any]) -> bool:
    """Whether a policy sentence makes a value the gate blocks the condition that allows the action ("Remove the freeze
    fee only when its medical note is on file" against a gate blocking `on file`): the policy says the opposite."""
    condition = ALLOWS_ONLY.search(sentence)
    if condition is None:
        return False
    blocked = {str(v) for v in gate.get("blocked", [])} - {str(v) for v in gate.get("allowed", [])}
    return any(raw in blocked and where >= condition.end() and not NEGATION.search(sentence[condition.end():where])
               for raw, where in _named_values(sentence, [*gate.get("blocked", []), *gate.get("allowed", [])]))


def rules_gate(rules: Any, write: str, fields: dict[str, Counter]) -> dict[str, Any] | None:
    """The gate a write's rule states on an enum field of the records: a `requires` that lists the allowed (or
    forbidden) values, or an `allows` alternative that does; the other values the runs show fill the other side."""
    rule = rules.rule(write) if rules is not None else None
    if rule is None:
        return None
    for cond in [*rule.requires, *rule.allows]:
        if cond.op not in ("in", "not_in") or cond.path.startswith("fact:") or cond.also:
            continue
        seen = [v for v in fields.get(cond.path, {})]
        listed = list(cond.value)
        others = [v for v in seen if v not in listed]
        allowed, blocked = (listed, others) if cond.op == "in" else (others, listed)
        if allowed and blocked:
            return {"field": cond.path, "allowed": sorted(map(str, allowed)), "blocked": sorted(map(str, blocked))}
    return None


GENERIC_VALUES = frozenset({"yes", "true", "false", "none", "null"})


def policy_support(policy: str, gate: dict[str, Any], write: str, said: list[str] = ()) -> int:
    """How the policy backs a gate for `write`: 2 when a sentence names one of its values (`basic economy`; not a
    yes / no, which any sentence may hold) together with a verb for the write's action ("Basic economy flights cannot
    be modified"); or, in a sentence that restricts (`RESTRICTS`: "only when", "cannot"), together with the thing the
    write acts on (`policy_nouns`) where the policy never names the verb, or with two of `said` (the words users ask
    for the write with, `ResultIndex.asked_words`); 1 when the policy names the field or a value anywhere; 0
    otherwise, and 0 when such a sentence allows the write on a value the gate blocks (`allows_other_values`)."""
    if not policy_mentions(policy, gate):
        return 0
    action = re.compile(word_pattern(list(verb_synonyms(write))), re.I)
    # Where the policy words the action its own way ("You may stop the standing order ... only when its kyc is
    # complete" for `standing_orders.cancel`; "get an extension on the final project" for `request_extension`, whose
    # verb the policy says only as a noun), the thing acted on or the users' words name it; only in a sentence that
    # restricts, since they are also in sentences that say nothing of a rule ("As the Lakeside clinic's assistant you
    # help patients with their appointments"), and the thing only where the verb is nowhere ("flight" is in most
    # airline sentences).
    things = re.compile(word_pattern(policy_nouns(write)), re.I) if not action.search(policy) else None
    asked = [re.compile(rf"\b{re.escape(w)}\b") for w in said]
    values = [*gate.get("blocked", []), *gate.get("allowed", [])]
    about = [s for s in _sentences(policy) if _named_values(s, values) and (action.search(s) or (RESTRICTS.search(s) and (
        (things is not None and things.search(s)) or sum(bool(a.search(s)) for a in asked) >= 2)))]
    # a sentence about the write that allows it on a value the gate blocks says the opposite of the gate
    if any(allows_other_values(s, gate) for s in about):
        return 0
    return 2 if about else 1


def policy_mentions(policy: str, gate: dict[str, Any]) -> bool:
    """Whether the policy names the gate's field (its last path segment) or one of its values, as words."""
    lowered = policy.lower()
    terms = [gate["field"].split(".")[-1], *map(str, gate.get("allowed", [])), *map(str, gate.get("blocked", []))]
    return any(re.search(rf"\b{re.escape(t.lower().replace('_', ' '))}\b", lowered.replace("_", " ")) for t in terms if t)
