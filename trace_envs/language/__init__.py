"""How agents' and users' messages are read: one reading for the scripted user, the checks and the labelers.

The scripted user decides what to answer, a check decides what to pay and a labeler decides what a real run shows,
all from what a message says; they read it with the same code, so the user and the reward never disagree about what
a message said. The bottom layer of the library: it imports only the standard library and itself (a spec's
patterns are compiled by the checks, on RE2, and handed in).

- `plain`: text made plain (lower case, straight quotes); `sentences`: the one sentence splitter;
- `words`: the words of tool names and for their actions (verb and noun synonyms, record nouns, hand-off tools);
  `patterns`: regexes built from word lists (a word with its inflections, a phrase, a verb phrase);
- `values`: where a value (a string, a number, a date, a structure) is stated in a text;
- detectors: `refusals`, `confirmations` (asking and agreeing), `questions` (what is asked, which facts),
  `progress` (announced steps, "hold on"), `instructions` (the user told to act on its side), and `turns`, which
  reads a whole agent turn as one kind (the scripted user's reading).

`tests/test_layering.py` keeps refusal, confirmation and progress phrasings here and nowhere else.
"""
