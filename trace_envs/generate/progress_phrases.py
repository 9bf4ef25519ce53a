"""Progress messages real agents sent before a tool call, for the oracle that announces each step (`chatty`).

Each is a tau-bench gpt-4o airline turn labelled "progress" in tests/data/agent_turns.jsonl (source run and message
index beside it), kept when it names no record, value or policy term, so that it fits every domain's env.
"""

PROGRESS_PHRASES: tuple[str, ...] = (
    # task5-trial0, message 4
    "No problem, I can look up your reservation details using your user ID. Let me retrieve that information for you.",
    # task17-trial0, message 4
    "I can retrieve your reservation details using your user ID. Let me do that for you.",
    # task21-trial0, message 4
    "No problem, I can retrieve your reservation details using your user ID. Please hold on for a moment.",
    # task40-trial0, message 4
    "No problem, I will retrieve your reservation details using your user ID to find the relevant reservation. "
    "Please hold on for a moment.",
    # task6-trial1, message 4
    "No problem! I will retrieve your reservation details using your user ID. Please hold on for a moment.",
    # task12-trial1, message 4
    "No problem! I'll retrieve your reservation details first. Please hold on for a moment.",
    # task17-trial1, message 4
    "I'll retrieve your reservation details using your user ID. Please hold on for a moment.",
    # task23-trial1, message 4
    "No problem! I will retrieve your user ID using the reservation details. Please hold on for a moment.",
    # task28-trial1, message 4
    "Since you don't have the reservation ID, I'll first retrieve your reservation details. Please hold on for a "
    "moment.",
    # task40-trial1, message 18
    "I understand the importance of this issue. Let me double-check the details of your reservations to ensure "
    "nothing was missed.",
    # task17-trial2, message 6
    "I can check the details of your reservations using your user ID, which might help us find the reservation ID. "
    "Let me retrieve your reservation details first.",
    # task22-trial2, message 4
    "No problem, I can retrieve your reservation details using your user ID. Let me do that for you.",
    # task23-trial2, message 4
    "I can retrieve your user ID using your reservation ID. Please hold on for a moment while I get the details.",
    # task29-trial2, message 4
    "To assist you further, I'll first retrieve your reservation details using your user ID. Please hold on for a "
    "moment.",
    # task33-trial2, message 4
    "I can help you retrieve the reservation details. Let me first get the details of your user profile to find "
    "your reservation information. Please hold on for a moment.",
    # task6-trial3, message 4
    "No problem! I can look up your reservation details for you. Please hold on for a moment while I retrieve that "
    "information.",
    # task21-trial3, message 4
    "No problem! I can look up your reservation details using your user ID. Please give me a moment.",
    # task28-trial3, message 4
    "I will retrieve your reservation details first to find the reservation ID. Please hold on for a moment.",
)
