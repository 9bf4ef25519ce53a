"""What an agent message asks the user for: the parts that ask, and the facts they name.

`asking_segments` finds each question or request sentence up to its purpose clause ("..., so I can check"), the
items of a list it introduces ("Please provide: - your user id ..."), and the sentence before one that asks for
"these details"; offers of more help ("If you need anything else, let me know", "Is there anything else?") ask
nothing. `facts_asked` names the facts those parts ask for, by the words agents use (one key per fact: "first and
last name" is two), with `choice:N` for each "which one" question. `fact_phrasings` gives every phrasing that
names one fact the scripted user holds ("reservation id" -> "booking reference", "confirmation code", ...).
The labels and facts were fitted on tests/data/agent_turns.jsonl (real agents' turns labelled by hand).
"""

from __future__ import annotations

import re
from functools import lru_cache

from trace_envs.language.plain import normalize
from trace_envs.language.sentences import opens_with_condition, plain_sentences

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


def asking_segments(text: str) -> list[str]:
    """The parts of `text` that ask the user for something (see the module doc), `plain`."""
    return list(_asking_segments(text))


# Validation plays the same agent messages over many seeds and probes, and each message is read several times a turn
# (the user's reply, the facts it is asked for): this reading was a tenth of generate's time.
@lru_cache(maxsize=4096)
def _asking_segments(text: str) -> tuple[str, ...]:
    sents = plain_sentences(text)
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
        conditional = opens_with_condition(s) and not re.match(r"^if (so|yes)\b", s)
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
    return tuple(out)


def facts_asked(text: str, segments: list[str] | None = None) -> list[str]:
    """The fact keys `text` asks for, in order of appearance (`_FACTS` keys, and `choice:N` for each "which one"
    question); `segments`: its `asking_segments` when already known."""
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


# ---- the phrasings of the facts a user holds ------------------------------------------------------------------------
# Other names people use for ids of the user's own records and for its account.
_ID_SUFFIXES = ("id", "number", "code", "reference", "ref", "no")
_NOUN_GROUPS = ({"reservation", "booking", "trip"}, {"order", "purchase"})
_RECORD_REFERENCES = (
    "booking reference", "booking number", "confirmation code", "confirmation number", "reference number",
    "reference code",
)
_ACCOUNT_WORDS = ("user", "customer", "account", "profile", "member")
_ACCOUNT_REFERENCES = (
    "user id", "account id", "account number", "customer id", "customer number", "username", "user name",
    "profile id", "member id", "member number",
)
# How agents ask for the personal facts a user gives to be identified ("your first and last name", "your zip").
_NAME = ("first and last name", "full name", "your name", "the name", "name on the account")
_PERSONAL: dict[str, tuple[str, ...]] = {
    "first name": _NAME, "last name": _NAME, "name": _NAME, "full name": _NAME,
    "email": ("email", "e mail", "email address"), "email address": ("email", "e mail"),
    "zip code": ("zip", "zip code", "postal code", "postcode"), "zip": ("zip code", "postal code"),
    "phone number": ("phone number", "phone", "mobile number", "which line", "the line"),
    "date of birth": ("date of birth", "birth date", "birthday", "dob"),
}
# Values an agent offers as examples are not values it states as known: "(change of plan, airline cancelled
# flight, ...)", "such as ...".
_OPTIONS = re.compile(r"\([^)]*\)|\"[^\"]*\"|\b(e\.g\.|such as|for example|like)\b.*")


def fact_phrasings(label: str, aliases: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Every phrasing that names the fact `label`: the label and its aliases, plus the usual synonyms of its kind
    ("reservation id" -> "booking reference", "confirmation code", ...; "user id" -> "account number", "username",
    ...; a reason -> "why"; a payment method -> "payment", "pay with", "card")."""
    norm = normalize(label)
    words = norm.split()
    out = [norm, *(normalize(a) for a in aliases if a.strip())]
    if words and words[0] in _ACCOUNT_WORDS and words[-1] in (*_ID_SUFFIXES, "name"):
        out += _ACCOUNT_REFERENCES
    elif len(words) >= 2 and words[-1] in _ID_SUFFIXES:
        noun = " ".join(words[:-1])
        nouns = next((g for g in _NOUN_GROUPS if noun in g), {noun})
        out += [f"{n} {s}" for n in sorted(nouns) for s in _ID_SUFFIXES]
        out += _RECORD_REFERENCES
        out += [f"which {n}" for n in sorted(nouns)]  # "which reservation is it?" asks for its id
    if "reason" in words:
        out += ["reason", "why"]
    if "payment" in words:
        out += ["payment", "pay with", "pay", "card"]
    out += _PERSONAL.get(norm, ())
    return list(dict.fromkeys(p for p in out if p))


def without_offered_options(segment: str) -> str:
    """A question's text (lower case) without the options it offers as examples: what it states as known."""
    return _OPTIONS.sub(" ", segment.lower())


# Verbs of a question that asks for information ("Could you tell me the due date?", "Can you check my balance?"); any
# other verb after "could you" asks the agent to act ("Could you please move the contract for service point SP5 to my
# new home?"), and the thing it acts on is not what the user wants to be told.
_INFO_VERBS = (
    "tell", "give", "check", "show", "find", "look", "let", "confirm", "remind", "say", "share", "read", "see",
    "provide", "pull", "bring", "verify", "double-check", "get", "fetch", "explain", "send", "email", "text", "list",
    "help", "know", "clarify", "figure",
)
_ACTION_REQUEST = re.compile(
    r"\b(?:can|could|would|will) you\s+(?:please\s+|kindly\s+|just\s+|also\s+)*(?!(?:"
    + "|".join(map(re.escape, _INFO_VERBS)) + r")\b)[a-z]+\b"
)
_WH_WORD = re.compile(r"\b(what|which|when|where|how much|how many|whether)\b")


def asks_for_an_action(sentence: str) -> bool:
    """Whether a user's sentence asks the agent to do something ("Could you please move the contract for service
    point SP5054077 to my new home?") rather than to tell them something ("Could you tell me the contract of ...?",
    "Can you check what the contract is?")."""
    low = normalize(sentence)
    return bool(_ACTION_REQUEST.search(low)) and not _WH_WORD.search(low)
