"""What counts as the agent refusing a request: the one home of refusal phrasings, read two ways.

`refuses_with_reason` (the reward and the labelers): a message refuses with its reason when one of its sentences

- declines: "I can't / cannot / am unable to / am not able to", "... is not possible / not eligible / not allowed",
  "our policy does not allow", "cannot be modified", "there are no further options" (the agent's or the rule's "no",
  not the user's: "you're unable to send MMS" or "if you can't find it" decline nothing; nor does a failed lookup:
  "I was unable to locate the order", "I couldn't find an account"); and
- gives a reason, in that sentence or the one before: a reason clause ("because", "since", "due to", "as it ...",
  "..., so it can't"), the policy or a rule ("according to our policy", "under our policy", "can only", "unless",
  "for your security"), or a rule stated of a kind of thing ("basic economy flights cannot be modified", where a
  pronoun subject, "it cannot be modified", states no rule).

A tool failure is not a refusal ("I was unable to process the return because of a technical issue"), nor is a missing
precondition ("without the reservation ids I cannot start the cancellation" waits for the ids). With `words`
(the action words of a write, see `words.action_words`), the declining sentence or the one before must name the
action.

`refuses` (the scripted user's reading of a turn): the agent will not or cannot do what was asked ("basic economy
cannot be modified", "I'm sorry, but our policy ..."), with or without a reason, so the user stops asking for it;
"I'm unable to proceed without your user id" asks for the id and "I can't find it" reports a failed lookup, and a
sentence opening with "please note" informs. It was fitted on the scripted user's hand-labelled turns
(tests/data/agent_turns.jsonl), `refuses_with_reason` on the labelers' (tests/data/labeled_turns.jsonl). Both read
the message's `plain_sentences` (its first `MAX_READ` characters, lower case, list markers dropped, as the user
does; the labelers used to read it whole, markers kept: the snapshot of mined specs and the agreement figures are
the same), and share the phrasings of a decline ("can't",
"not allowed", "does not allow"). Their lists stay two: one decline list made of both, with both sets of
exceptions, read by the user and the labelers alike, agrees with 351 of the user's 359 turns instead of 353 and
with 49 of the labelers' 51 refusal rows instead of 50, and changes what is mined on tau-bench airline (how many
missing writes count as refused).

The regexes are fixed literals (Python's `re`; no pattern from a spec reaches them).
"""

from __future__ import annotations

import re
from functools import lru_cache

from trace_envs.language.patterns import words_regex
from trace_envs.language.sentences import plain_sentences

# Phrasings both readings decline with: "can't", "not allowed", "does not allow".
_CANNOT = r"can't|cannot|can not"
_NOT_ALLOWED = r"allowed|permitted|eligible|possible"
_DOES_NOT = r"(does|do)(n't| not)"

_DECLINE = re.compile(
    rf"\b({_CANNOT}|unable to|not able to|won't be able to|will not be able to|not in a position to|"
    rf"(not|isn't|aren't) ({_NOT_ALLOWED})|ineligible|non-refundable|not refundable|"
    rf"{_DOES_NOT} (allow|permit|support)|must decline|no longer (possible|allowed)|"
    r"there (is|are) no (further |other )?(options?|way)|nothing (more|else) (i|we) can do)\b"
)
# A decline that is the user's, or hypothetical: "you're unable to", "if you can't".
_NOT_THE_AGENT = re.compile(r"\b(you|you're|you are|if|when|whether|once)\W+(still\W+|also\W+)?$")
# A failed lookup: "unable to locate", "can't find".
_LOOKUP = re.compile(r"^\W*(seem to\W+)?(to\W+)?(find|locate|see|access|retrieve|load|look|identify|verify|reach)\b")
_REASON = re.compile(
    r"\b(because|since|due to|owing to|as (it|this|that|the|your|you|they|there|its|these|those|per)|per (our|the)|"
    r"according to|under (our|the|airline|company)|based on|in line with|polic(y|ies)|rules?|terms|only|unless|"
    r"for (your|security|safety|privacy)|so (it|we|i|this|that|they)|which means|requires?|restrict(ed|ions?)|"
    r"once (booked|placed|shipped|delivered)|after the (initial )?(booking|purchase))\b"
)
_FAILURE = re.compile(r"\b(technical|system) (issue|problem|error|glitch|outage)|\btemporar(y|ily)\b")
# "basic economy flights cannot be modified": the subject of a "cannot be" is a kind of thing, not a pronoun.
_RULE_OF_A_KIND = re.compile(rf"\b([a-z][a-z\-]*)\s+({_CANNOT}|may not|are not|is not)\s+be\s+[a-z]+")
_PRONOUNS = frozenset("it this that which they these those he she i we you and or but so also then still".split())


def refuses_with_reason(text: str | None, words: list[str] | None = None) -> bool:
    """Whether an agent message declines a request and says why (see the module doc)."""
    if not text:
        return False
    sentences = plain_sentences(text)
    named = words_regex(tuple(words)) if words else None
    for i, sentence in enumerate(sentences):
        if not _declines(sentence) or _FAILURE.search(sentence):
            continue
        before = sentences[i - 1] if i else ""
        if named is not None and not (named.search(sentence) or named.search(before)):
            continue
        if _REASON.search(sentence) or _states_a_rule(sentence) or (_REASON.search(before) and not _FAILURE.search(before)):
            return True
    return False


@lru_cache(maxsize=8192)  # an agent's sentences recur across runs and replays; the decline scan is a long alternation
def _declines(sentence: str) -> bool:
    for m in _DECLINE.finditer(sentence):
        if _NOT_THE_AGENT.search(sentence[: m.start()]) or _LOOKUP.search(sentence[m.end() :]):
            continue
        return True
    return False


def _states_a_rule(sentence: str) -> bool:
    return any(m.group(1) not in _PRONOUNS for m in _RULE_OF_A_KIND.finditer(sentence))


# The scripted user's reading: a refusal as a kind of turn.
_REFUSAL = re.compile(
    rf"\b((i|we)('m| am| are|'re)? (still |simply |currently )?({_CANNOT}|unable|not able)|"
    rf"({_CANNOT}) be (modified|changed|cancell?ed|refunded|added|removed|rebooked|altered|upgraded|done|"
    rf"made|split)|can only be (made|done|changed|modified|cancell?ed|refunded|added)|"
    rf"(is|are) not ({_NOT_ALLOWED}|supported)|not eligible|"
    rf"{_DOES_NOT} (allow|support|permit|cover|provide)|(don't|do not) have access|"
    r"no (change fee option or )?exception|is strict|due to (the )?restrictions|(i'm|i am) sorry, but "
    r"(our|the|refunds?|according|basic|under|i|this|that|we))\b"
)
# "I'm unable to proceed without your user id" asks for the id; "I can't find it" reports a failed lookup.
_NOT_REFUSAL = re.compile(
    r"\b(unable to|can't|cannot|not able to) (proceed|help|assist)( you)? without\b|"
    r"\b(can't|cannot|unable to|not able to) (seem to )?(find|locate|see|retrieve|load)\b"
)


def refuses(plain_cut: list[str]) -> bool:
    """Whether a turn (its `plain_sentences`) says the agent will not or cannot do what was asked."""
    return any(_refuses(s) for s in plain_cut)


@lru_cache(maxsize=8192)  # each agent sentence is read by the user and by the checks, replayed over the seeds
def _refuses(sentence: str) -> bool:
    return bool(_REFUSAL.search(sentence)) and not _NOT_REFUSAL.search(sentence) and \
        not sentence.startswith("please note")


# A policy sentence that forbids an action or makes it conditional ("Basic economy flights cannot be modified",
# "can be cancelled only if travel insurance is bought"): what a gate learned from runs is held to.
RESTRICTS = re.compile(r"\b(cannot|can't|can not|not|no|never|only if|only when|unless|forbidden|prohibited)\b")
# What follows these in a policy sentence is the condition under which the action is allowed ("Remove the fee only when
# its medical note is on file"), unless a negation comes first ("only if the flight is not basic economy").
ALLOWS_ONLY = re.compile(r"\b(only if|only when|unless)\b")
NEGATION = re.compile(r"\b(not|no|never|isn't|aren't|wasn't|without)\b")
