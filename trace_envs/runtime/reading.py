"""How the scripted user reads one agent message: which kind of turn it is, from its words alone.

`read_message` sorts a message into the kinds of turn real agents send (the labels of
`tests/data/agent_turns.jsonl`, 359 assistant turns of tau-bench and tau2-bench runs labelled by hand):

- progress: the agent says it is working on it ("Let me check", "I'm on it", "Please hold on"): the user waits;
- question_one_fact / question_several_facts: it asks the user for one fact or for several (a user id and a
  reservation id; "your email, or your first name, last name and zip code"): the user gives every one it holds;
- confirmation_request: it asks for a yes to an action it names ("Would you like me to cancel ...?", "Please
  confirm with yes to proceed"): the user says yes only when the action is one it asked for;
- completion_claim: a statement of what was done or found ("Your reservation has been cancelled."): the user
  ends the conversation once nothing it wants is pending, else asks for the next thing;
- refusal_with_reason: it will not or cannot do what was asked ("basic economy cannot be modified"), also when
  it then offers a transfer or alternatives: the user stops asking for what was refused;
- handoff: it is transferring the user to a human now: the user waits for the transfer;
- goodbye: a sign-off that carries no result ("You're welcome! Have a great day!"): the conversation ends;
- user_instruction: it tells the user to do something on their own side (turn off airplane mode, check the
  status bar, restart the phone): the user does it when it can.

The order of the tests below is what the labelled turns taught: a handoff or a thanks-and-goodbye first; then an
instruction to the user; a refusal (unless what it asks to confirm is a concrete action of its own); a
confirmation; an explicit wait ("hold on", "one moment"); a question; an announced step; else a statement. Regexes
and word lists only: it runs at every env step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Label = Literal[
    "progress", "question_one_fact", "question_several_facts", "confirmation_request", "completion_claim",
    "refusal_with_reason", "handoff", "goodbye", "user_instruction",
]
LABELS: tuple[Label, ...] = (
    "progress", "question_one_fact", "question_several_facts", "confirmation_request", "completion_claim",
    "refusal_with_reason", "handoff", "goodbye", "user_instruction",
)
MAX_READ = 4_000

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def plain(text: str) -> str:
    """Lowercase with typographic quotes made plain and markdown emphasis dropped; line breaks kept."""
    text = text[:MAX_READ].lower()
    for a, b in (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\u2014", " - "), ("**", "")):
        text = text.replace(a, b)
    return text


def sentences(text: str) -> list[str]:
    """`plain` sentences of `text`, list markers ("1.", "-", bullets) dropped."""
    out = []
    for s in SENTENCE_END.split(plain(text)):
        s = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s*", "", s).strip()
        if s:
            out.append(s)
    return out


# ---- cues ---------------------------------------------------------------------------------------------------------
_HANDOFF = re.compile(
    r"\b(you are being transferred|you're being transferred|(i'll|i will|let me)( now| need to)? (transfer|connect) you"
    r"|i('m| am) (now )?transferring you|proceed with the transfer|while i (transfer|connect) you)\b"
)
_HOLD = re.compile(
    r"\b(hold on|hang on|one moment|a moment|one second|just a (sec|second|minute)|bear with me|please wait|"
    r"give me a (moment|second|minute|sec))\b"
)
# "take care of that for you" is a promise, not a farewell.
_SIGNOFF = re.compile(
    r"\b(good ?bye|bye|have an? (nice|great|good|wonderful|lovely|safe|pleasant) (day|one|evening|trip|flight|weekend"
    r"|journey|time)|safe travels|take care(?! of)|wishing you (all the best|a (great|good|nice|safe|speedy))|"
    r"all the best)\b"
)
_THANKS_REPLY = re.compile(
    r"^(you're|you are) (very |most )?welcome|^(that's|that is|what) (great|wonderful|fantastic|excellent|good) "
    r"(news|to hear)|^(i'm|i am) (so )?glad"
)
_DONE = re.compile(
    r"\b((has|have) (now )?(been|successfully)|successfully|(is|are) (now )?complete|completed|all set|"
    r"(was|were) (cancell?ed|updated|booked|issued|processed|submitted|changed|added|modified))\b"
)
# Actions the agent takes on its side: what a confirmation asks about (reads such as "list" or "look up" are not).
_WRITE = (
    r"(proceed|go ahead|continue|book|cancel|change|modify|upgrade|downgrade|update|exchange|return|issue|send|"
    r"submit|refund|transfer|add|remove|switch|place|apply|process|finalize|make (the|these|this|those) changes?|"
    r"use)\w*"
)
_WOULD_YOU = re.compile(rf"\b(would|do) you (still )?(like|want|wish) (me )?to\b.{{0,80}}?\b{_WRITE}\b")
_CONFIRM_YOU_WANT = re.compile(
    rf"\bconfirm(ation)? (if|that|whether) you('d| would)? (still )?(want|like|wish|would like) (me )?to\b.{{0,60}}?"
    rf"\b{_WRITE}\b"
)
_CONFIRM_ALL = re.compile(
    r"\bconfirm (if|that|whether) (everything|all|this|these|the (details|changes|above))|"
    r"\bconfirm( (with|by)( replying)?| if you'd like)? \"?yes|\bconfirm (this|these|both|the) \w+( \w+)? to proceed|"
    r"\bconfirm to proceed|\bconfirm\b.{0,200}\bto proceed\b|\bconfirm[.!]?$|\bconfirm,? and i('ll| will)|"
    r"^to confirm, you (want|would like)|\breply \"?yes|\(yes/no\)|\byes or no\b|\bdo you confirm\b|"
    r"\bis (this|that|everything|all this) (correct|right|ok)\b|\bshall i\b|\bshould i (proceed|go ahead)"
)
# Every `_CONFIRM_ALL` alternative holds one of these words: a cheap test first, as most sentences hold none.
_CONFIRM_WORDS = re.compile(r"confirm|yes|shall|should|correct|right|\bok\b")
_DO_THAT = re.compile(r"\bwould you like me to do (that|this|so)\b")
_REFUSAL = re.compile(
    r"\b((i|we)('m| am| are|'re)? (still |simply |currently )?(can't|cannot|can not|unable|not able)|"
    r"(cannot|can't|can not) be (modified|changed|cancell?ed|refunded|added|removed|rebooked|altered|upgraded|done|"
    r"made|split)|can only be (made|done|changed|modified|cancell?ed|refunded|added)|"
    r"(is|are) not (allowed|permitted|eligible|possible|supported)|not eligible|"
    r"(doesn't|does not|don't|do not) (allow|support|permit|cover|provide)|(don't|do not) have access|"
    r"no (change fee option or )?exception|is strict|due to (the )?restrictions|(i'm|i am) sorry, but "
    r"(our|the|refunds?|according|basic|under|i|this|that|we))\b"
)
# "I'm unable to proceed without your user id" asks for the id; "I can't find it" reports a failed lookup.
_NOT_REFUSAL = re.compile(
    r"\b(unable to|can't|cannot|not able to) (proceed|help|assist)( you)? without\b|"
    r"\b(can't|cannot|unable to|not able to) (seem to )?(find|locate|see|retrieve|load)\b"
)
_ALTERNATIVES = re.compile(
    r"\b(transfer|human|(do|with) (that|this)|anything else|would you prefer|or would you|other options?)\b| or |:$"
)
_PROGRESS = re.compile(
    r"\b(let me(?! know)|let's (first |now )?(proceed|start|continue|explore|search|find|check|look|begin|go|try|get)|"
    r"(i'll|i will) (now |first |then |just |go ahead and |start by )?(search|retriev|check|look|proceed|mak|updat|"
    r"cancel|finaliz|start|begin|get|pull|review|verif|gather|find|calculat|process|book|modif|chang|see|do |tr|"
    r"ensur|compar|double|take care|handl|work|need to (verify|check))\w*|i need to (check|verify)|"
    r"(i'm|i am) on it|on it\b|pulling (up|that)|looking (into|up)|working on (it|that|this|your)|right away|"
    r"^checking\b|\bchecking (on|that|this|your|the)\b|allow me|^one sec|"
    r"(i'm|i am) (now )?(checking|looking|retrieving|pulling|searching|reviewing|processing|going to))"
)
_CONDITIONAL = re.compile(r"^(if|once|when|after|as soon as|should)\b")
# Offers of more help are no questions: "If you need anything else, let me know", "Is there anything else?".
_OFFER = re.compile(
    r"\b(anything else|feel free|further assistance|any (more|other|further) (questions|help|assistance|changes)|"
    r"if you (need|have) (any|more|further|help)|i'm here to help|need more help)\b"
)
_ASK = re.compile(
    r"^(could|can|would|will|may) (you|i (have|ask|get))\b|^(tell me|what|which|what's|whats)\b|"
    r"\b(please|kindly) (provide|share|tell|let me know|specify|confirm|give (me|us) (your|the)|send|enter|reply|"
    r"double-check|check|let us know|list)|\b(could|can|would|will) you (please )?(provide|share|tell|"
    r"let me know|specify|confirm|give|send|double-check|check|verify)|\blet me know (which|what|your|the|how|if|"
    r"whether|when|where)|\b(i'll|i will|i'd|i would|i)( still)? need (your|the|to know|a few|some|more|you to "
    r"provide|following)|\bplease provide|\byou can provide|\bonce you (have|find|let me know)\b"
)
_ASK_IN_CONDITIONAL = re.compile(
    r"\b((you can|please) (provide|share|give)|let me know (which|what|your|the)|please let me know|(can|could) you)\b|"
    r"^once you have (your|the)\b"
)
_BACK_REFERENCE = re.compile(r"\b(these|those) (details|things)|\bthis information\b|\bprovide (these|those|them)\b")
_PURPOSE = re.compile(
    r",? (and|so( that)?) (i|we)('ll| will| can| could|'d| would| may)?\b|, (i|we) (can|will|'ll)\b|"
    r"\b(so|in order) (that )?(i|we) can\b|\bto (help|assist|proceed|check|locate|look|find|verify|access|get|"
    r"pull|review|process|see|determine|identify|search|book|complete|update|troubleshoot|diagnose|start|"
    r"confirm the|ensure)\b|\bthis will help\b|\bonce (i|we) have\b|\bbefore (i|we)\b|\bfor (the|your|this) "
)
_STEPS_INTRO = re.compile(r"(following|details|provide|need|know|let me know)[^.?!]*:$")

# What a user is asked for, by the words agents use; one fact per key ("first and last name" is two).
_FACTS: tuple[tuple[str, str], ...] = (
    ("email", r"e-?mail( address)?"),
    ("user id", r"user ?id|user name|username"),
    ("customer id", r"customer id"),
    ("reservation id", r"reservation (id|ids|number|code)s?|booking (reference|number|id)|confirmation (code|number)|"
                       r"which (reservation|booking)s?"),
    ("order id", r"order (id|number|#)s?|which order"),
    ("first name", r"first name|first and last name"),
    ("last name", r"last name|first and last name"),
    ("name", r"full name|(your|the) name\b|spelling"),
    ("zip code", r"zip( code)?|postal code"),
    ("date of birth", r"date of birth|birth ?date|\bdob\b"),
    ("phone number", r"phone number|which (phone|line)|affected line"),
    ("reason", r"reason|\bwhy\b"),
    ("payment", r"payment method|how would you like to pay|which card|\bpay(ment)?\b"),
    ("address", r"(?<!e-mail )(?<!email )address"),
    ("origin", r"origin"),
    ("destination", r"destination"),
    ("departure date", r"departure date|new travel date|travel date"),
    ("return date", r"return date"),
    ("dates", r"flight numbers and dates|the dates?"),
    ("passengers", r"passengers?|number of passengers"),
    ("cabin", r"cabin( class)?|business class"),
    ("insurance", r"insurance"),
    ("bags", r"\bbags\b|baggage|luggage"),
    ("booked recently", r"within (the last )?24 hours"),
    ("calls", r"make (regular )?calls"),
    ("mobile data", r"mobile data"),
    ("devices", r"all (your )?devices"),
    ("travelling", r"travell?ing|home area"),
    ("sim", r"\bsim\b"),
    ("service message", r"\"no service\" message"),
    ("certificates", r"certificates and gift cards"),
    ("another phone", r"another phone"),
)
_FACT_RES = tuple((key, re.compile(rf"(?<![a-z0-9])(?:{rx})")) for key, rx in _FACTS)
_WHICH = re.compile(r"\bwhich (one|of these|two|option|item|i\d|\w+ option)\b")

# ---- telecom-style instructions -----------------------------------------------------------------------------------
_DEVICE = re.compile(
    r"\b(phone|device|settings|status bar|apn|sim|app|screen|vpn|data saver|wi-?fi|airplane|mobile data|network|"
    r"signal|permissions?|internet|mms|picture message|payment requests?|pin|speed test)\b"
)
_DO_VERB = (
    r"(turn|toggle|switch|restart|reboot|reseat|power|remove|insert|reinsert|enable|disable|grant|enter|open|go to|"
    r"tap|select|set|make sure|try|check|look|follow|accept|pay|unlock|reset|swipe|browse|run|perform)"
)
_INSTRUCT = re.compile(
    rf"(^|, |; |: )(now,? |next,? |first,? |then,? |great[,!]? |yes,? |so,? |also,? )?(please |kindly )?"
    rf"(go ahead and |try to |also )?{_DO_VERB}\b|\b(please|kindly|go ahead and|you can go ahead and|you'll need to|"
    rf"you need to|need you to) {_DO_VERB}\b|\b(could|can) you (please )?{_DO_VERB}\b"
)


@dataclass
class Reading:
    """What one agent message does. label: the kind of turn; facts: the fact keys it asks for (`_FACTS` keys, and
    `choice:N` for each "which one" question); confirms: it asks for a yes to an action; refuses: it says it cannot
    or will not; signs_off: it closes the conversation ("have a great day"); waits: it announces a step or asks
    the user to hold on."""

    label: Label
    facts: list[str] = field(default_factory=list)
    confirms: bool = False
    refuses: bool = False
    signs_off: bool = False
    waits: bool = False


def asking_segments(text: str) -> list[str]:
    """The parts of `text` that ask the user for something: each question or request sentence up to its purpose
    clause ("..., so I can check"), the items of a list it introduces ("Please provide: - your user id ..."), and
    the sentence before one that asks for "these details". Offers of more help are left out."""
    sents = sentences(text)
    out: list[str] = []
    listing = False
    for i, s in enumerate(sents):
        ask = _ASK.search(s)
        if listing and len(s) < 200 and not ask and "?" not in s:
            out.append(s)
            continue
        listing = False
        if _OFFER.search(s) and not re.search(r"\b(provide|which)\b", s):
            continue
        conditional = bool(_CONDITIONAL.match(s)) and not re.match(r"^if (so|yes)\b", s)
        asks = _ASK_IN_CONDITIONAL.search(s) if conditional else ("?" in s or ask)
        if not asks:
            continue
        # the purpose clause that ends the request comes after its asking words
        cut = _PURPOSE.search(s, pos=ask.end() if ask else 0)
        out.append(s[: cut.start()] if cut and cut.start() > 0 else s)
        if _BACK_REFERENCE.search(s) and i > 0:
            out.append(sents[i - 1])
        if _STEPS_INTRO.search(s):
            listing = True
    return out


def facts_asked(text: str, segments: list[str] | None = None) -> list[str]:
    """The fact keys `text` asks for, in order of appearance (see `Reading.facts`); `segments`: its
    `asking_segments` when already known."""
    found: list[str] = []
    which = 0
    for seg in asking_segments(text) if segments is None else segments:
        seg = re.sub(r"\([^)]*\)", " ", seg)  # "(street, city, state, zip)" spells out one fact
        asked_before = bool(found)
        for key, rx in _FACT_RES:
            if key not in found and rx.search(seg):
                found.append(key)
        choices = list(_WHICH.finditer(seg))
        # "Let me know which one" after "which reservation id?" asks the same thing again
        if len(choices) == 1 and asked_before and len(found) == len(set(found)) and not any(
                rx.search(seg) for _, rx in _FACT_RES):
            continue
        for _ in choices:
            which += 1
            found.append(f"choice:{which}")
    return found


def _confirms(sents: list[str]) -> bool:
    for i, s in enumerate(sents):
        # "Which order would you like to modify?" asks for a choice, not for a yes
        would = _WOULD_YOU.search(s) and not re.search(r"\b(which|what|how)\b[^.?!]{0,40}\bwould you", s)
        if would or _CONFIRM_YOU_WANT.search(s) or _CONFIRM_WORDS.search(s) and _CONFIRM_ALL.search(s):
            return True
        if _DO_THAT.search(s) and i > 0 and re.search(rf"\b{_WRITE}\b", sents[i - 1]):
            return True
    return False


def _instructs(sents: list[str]) -> bool:
    return any(_INSTRUCT.search(s) and _DEVICE.search(s) for s in sents)


def _refuses(sents: list[str]) -> bool:
    return any(_REFUSAL.search(s) and not _NOT_REFUSAL.search(s) and not s.startswith("please note")
               for s in sents)


def _announces(sents: list[str]) -> bool:
    return any(_PROGRESS.search(s) and not _CONDITIONAL.match(s) for s in sents)


def read_message(text: str) -> Reading:
    """The kind of turn `text` is (see the module docstring), with what it asks and whether it signs off."""
    sents = sentences(text)
    if not sents:
        return Reading("completion_claim")
    whole = " ".join(sents)
    signs_off = bool(_SIGNOFF.search(whole))
    confirms, refuses = _confirms(sents), _refuses(sents)
    segments = asking_segments(text)
    facts = facts_asked(text, segments)
    waits = bool(_HOLD.search(whole)) or _announces(sents)
    reading = Reading("completion_claim", facts, confirms, refuses, signs_off, waits)
    if _HANDOFF.search(whole) or ("transfer" in whole and _HOLD.search(whole)):
        reading.label = "handoff"
    elif signs_off and _THANKS_REPLY.search(sents[0]):
        reading.label = "goodbye"
    elif refuses and not (confirms and not any(_ALTERNATIVES.search(s) for s in sents if "?" in s or "would you" in s)):
        reading.label = "refusal_with_reason"
    elif _instructs(sents):
        reading.label = "user_instruction"
    elif confirms:
        reading.label = "confirmation_request"
    elif _HOLD.search(whole) and (_announces(sents) or not segments):
        reading.label = "progress"
    elif segments:
        reading.label = "question_several_facts" if len(facts) > 1 else "question_one_fact"
    elif _announces(sents):
        reading.label = "progress"
    elif signs_off and not _DONE.search(whole):
        reading.label = "goodbye"
    return reading
