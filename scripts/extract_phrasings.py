"""Extract the real user and agent sentences the domain randomizer speaks with, into
`trace_envs/datasets/randomized/phrasings.json`.

Reads the real tau-bench and tau2-bench runs in ../shared/data (see its SOURCE.md; MIT-licensed) and keeps the
sentences that carry no airline, retail or telecom content, so that a drawn domain of another business can say them:
greetings, identifications (the id and its label made placeholders), requests for help, yes and no answers, thanks
and closings, request leads ("Hi! I'd like to"), and the agent's greetings, id requests, acknowledgements,
confirmation questions, apologies and "anything else" closings. Each sentence keeps where it was first seen (file, task/trial, message).
The record nouns of the source ("reservation", "order", "booking") become `{record}`, the user id `{id}` and its label
`{id_label}`; a sentence with any other domain word or a digit is left out.

Usage: python scripts/extract_phrasings.py [--per-category 24]   (reads ../shared/data relative to the repo)
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from extract_turns import SOURCES, runs  # the same real runs, read the same way

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "trace_envs" / "datasets" / "randomized" / "phrasings.json"
RECORD = re.compile(r"\b(reservation|order|booking)s?\b", re.IGNORECASE)
USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{3,5}\b")
ID_LABEL = re.compile(r"\buser ID\b|\buser id\b|\bUser ID\b")
DOMAIN_WORDS = re.compile(
    r"(?i)\b(flights?|airports?|cabin|baggages?|bags?|seats?|airline|insurance|certificates?|items?|products?|"
    r"phones?|sim|data|mms|sms|wi-?fi|lines?|trips?|travel|economy|business|gift|cards?|zip|email|address|refunds?|"
    r"exchanges?|returns?|passengers?|destination|shipping|apn|roaming|airplane|device|network|store|jacket|camera|"
    r"payment|cancellation|upgrade|downgrade|membership|gold|silver|bronze|compensation|voucher|dates?|cities|"
    r"delayed|packages?|permissions?|signal|app|nonstop|rebook|modif\w*|cancel\w*|changes?|booked|purchase\w*|vpn|"
    r"keyboard|mouse|shopping|frustration|delay|kind words)\b|\d|\*\*|\[|\]"
)
CODE = re.compile(r"\b[A-Z]{5,}\b")  # a booking code ("MDCLVA"), not a word
GREETING = re.compile(r"^(Hi|Hello|Hey|Good (morning|afternoon|evening))\b[^.?!]{0,12}[.!]$")
REQUEST_LEAD = re.compile(
    r"^((?:(?:Hi|Hello|Hey)(?: there)?[!,.] )?(?:I'd like to|I’d like to|I would like to|I need to|I want to|"
    r"I'm looking to|I’m looking to|Could you please|Can you please|Could you|Can you|Please))\s+[a-z]")
CONFIRM_QUESTION = re.compile(r"(?i)\b(yes/no|confirm|proceed|go ahead)\b")


def _sentences(text: str) -> list[str]:
    text = text.replace("###STOP###", "").replace("###TRANSFER###", "").strip()
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def _generic(sentence: str) -> str | None:
    """The sentence with its record noun, user id and id label as placeholders, or None when domain words stay."""
    s = USER_ID.sub("{id}", sentence)
    s = ID_LABEL.sub("{id_label}", s)
    s = RECORD.sub("{record}", s)
    bare = s.replace("{id}", "").replace("{id_label}", "").replace("{record}", "")
    if DOMAIN_WORDS.search(bare) or CODE.search(bare):
        return None
    return s


def classify(role: str, sentence: str, first_turn: bool, after_confirm: bool, after_anything: bool,
             first_sentence: bool) -> list[tuple[str, str]]:
    """(category, text) pairs a sentence of a message gives."""
    out: list[tuple[str, str]] = []
    words = len(sentence.split())
    if role == "user":
        m = REQUEST_LEAD.match(sentence)
        if first_turn and m and not re.search(r"\d", m.group(1)):
            out.append(("user_request_lead", m.group(1)))
        g = _generic(sentence)
        if g is None:
            return out
        if first_turn and first_sentence and GREETING.match(g) and words <= 4:
            out.append(("user_greeting", g))
        if "{id}" in g and words <= 14 and "{id_label}" in g and "?" not in g and "already" not in g \
                and not g.startswith("But"):
            out.append(("user_identify", g))
        if g.endswith("?") and re.search(r"(?i)\b(help|assist)\b", g) and words <= 9 and "{" not in g:
            out.append(("user_help_ask", g))
        if re.match(r"(?i)(actually|i changed my mind|no, (that's|that’s) okay|no, thank)", g) and words <= 12 \
                and "{" not in g and "before" not in g:
            out.append(("user_decline", g))
        if after_confirm and first_sentence and re.match(r"(?i)(yes|sure|please|go ahead)\b", g) \
                and words <= 9 and "{" not in g:
            out.append(("user_yes", g))
        if after_anything and first_sentence and re.match(r"No, (that|I think)", g) and words <= 8 and "{" not in g:
            out.append(("user_no_more", g))
        if re.search(r"(?i)\bthank", g) and words <= 8 and "{" not in g and not re.search(r"(?i)options|you too", g):
            out.append(("user_thanks", g))
        if re.match(r"(?i)(alright|okay|ok)\b", g) and words <= 6 and "{" not in g and "thank" not in g.lower():
            out.append(("user_ack", g))
        return out
    g = _generic(sentence)
    if g is None:
        return out
    if first_turn and re.match(r"(?i)(hi|hello|how can i|how may i|welcome)\b", g) and words <= 8 and "{" not in g:
        out.append(("agent_greeting", g))
    if "{id_label}" in g and g.endswith("?") and "{id}" not in g and words <= 14:
        out.append(("agent_ask_id", g))
    if re.search(r"(?i)anything else", g) and words <= 16 and "{" not in g:
        out.append(("agent_anything_else", g))
    if g.endswith("?") and CONFIRM_QUESTION.search(g) and words <= 12 and "{" not in g and "transfer" not in g:
        out.append(("agent_confirm_ask", g))
    m = re.match(r"^(I['’]m sorry, but|Unfortunately,|I apologize, but|I'm afraid|I’m afraid)\s", sentence)
    if m:
        out.append(("agent_apology_lead", m.group(1)))
    if re.match(r"(?i)(i can help|sure|of course|certainly|absolutely)\b", g) and words <= 8 and "{" not in g \
            and not re.search(r"\b(?!I\b)[A-Z][a-z]+", g[1:]):
        out.append(("agent_ack", g))
    return out


def extract(per_category: int) -> dict:
    seen: dict[str, Counter] = {}
    where: dict[tuple[str, str], str] = {}
    for source, run, messages in ((s, r, m) for s in SOURCES for r, m in runs(s)):
        turns = {"user": 0, "assistant": 0}
        last_agent = ""
        for i, m in enumerate(messages):
            role, content = m.get("role"), m.get("content")
            if role not in turns or not isinstance(content, str) or not content.strip() or m["calls"]:
                continue
            first_turn = turns[role] == 0
            turns[role] += 1
            after_confirm = role == "user" and bool(CONFIRM_QUESTION.search(last_agent))
            after_anything = role == "user" and "anything else" in last_agent.lower()
            for j, sentence in enumerate(_sentences(content)):
                for cat, text in classify(role, sentence, first_turn, after_confirm, after_anything, j == 0):
                    seen.setdefault(cat, Counter())[text] += 1
                    where.setdefault((cat, text), f"{source}#{run}@{i}")
            if role == "assistant":
                last_agent = content
    categories = {}
    for cat in sorted(seen):
        top = sorted(seen[cat].items(), key=lambda kv: (-kv[1], kv[0]))[:per_category]
        categories[cat] = [{"text": t, "count": n, "from": where[(cat, t)]} for t, n in top]
    return {
        "about": "Sentences of real users and agents, extracted by scripts/extract_phrasings.py from the tau-bench "
                 "(sierra-research/tau-bench @ 59a200c6) and tau2-bench (sierra-research/tau2-bench @ 29510b1d) runs "
                 "in ../shared/data (MIT-licensed; see its SOURCE.md). `from` is file#task/trial@message index; "
                 "{record}, {id} and {id_label} replace the source's record noun, user id and its label.",
        "categories": categories,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--per-category", type=int, default=24)
    p.add_argument("--out", type=Path, default=OUT)
    a = p.parse_args()
    result = extract(a.per_category)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(", ".join(f"{c} {len(v)}" for c, v in result["categories"].items()) + f" -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
