"""The business themes a drawn domain speaks in: each its own organisation, customer and record nouns, id formats,
field names and values, the writes its desk makes, what its customers claim, owe, choose between and cannot do
themselves. None is the project's airline, retail or help desk.

A theme is data only; the task kinds (`kinds/`) compose tools, policy, records and turns from it. Id patterns use `#`
for a digit and `@` for a capital letter; `{first}` and `{last}` are the customer's names in lower case.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Act:
    """A write the desk makes on one of the customer's records.

    verb: a verb key of `naming.VERBS` (drawn among its synonyms) or a plain verb; obj: the object in the tool's name;
    says: how a customer asks for it ("renew my {record} {id}"); done: its past participle; arg: an extra argument
    and the values a customer picks from.
    """

    verb: str
    obj: str
    says: str
    done: str
    arg: tuple[str, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class Gate:
    """A categorical field of a record that decides whether a write is allowed."""

    field: str
    allowed: tuple[str, ...]
    blocked: tuple[str, ...]


@dataclass(frozen=True)
class Info:
    """A field a customer asks about: its name, how they say it, the values it takes."""

    field: str
    label: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Claim:
    """A fact a customer asserts about a record to get a fee waived: the field, the value they claim, the values it
    may hold instead, their words, the fee and the waiver."""

    field: str
    claimed: str
    other: tuple[str, ...]
    says: str
    waive: Act


@dataclass(frozen=True)
class Bills:
    """What a customer owes, several at a time: the noun, the id pattern, the amount range, the payment."""

    noun: str
    id: str
    low: float
    high: float
    pay: Act


@dataclass(frozen=True)
class Options:
    """What a customer books among several: the noun, its id, a place field and its values, a size field and its
    values, how they say the size ("for {n} people"), the booking act and the search's argument."""

    noun: str
    id: str
    place_field: str
    places: tuple[str, ...]
    size_field: str
    sizes: tuple[int, ...]
    size_says: str
    book: Act
    when: str


@dataclass(frozen=True)
class Theme:
    name: str
    org: str
    person: str
    id_label: str
    person_id: str
    record: str
    record_id: str
    title_field: str
    titles: tuple[str, ...]
    info: tuple[Info, ...]
    gates: tuple[Gate, ...]
    acts: tuple[Act, ...]
    claim: Claim
    bills: Bills
    options: Options
    topics: tuple[str, ...]
    decoy: str
    onfile: str
    onfile_id: str

    @property
    def records(self) -> str:
        return plural(self.record)


def plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def article(noun: str) -> str:
    """`noun` with its indefinite article."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def make_id(pattern: str, rng: random.Random, first: str = "", last: str = "") -> str:
    out = []
    for ch in pattern.replace("{first}", first.lower()).replace("{last}", last.lower()):
        out.append(str(rng.randint(0, 9)) if ch == "#" else chr(rng.randint(65, 90)) if ch == "@" else ch)
    return "".join(out)


FIRST = ("Amani", "Bjorn", "Camila", "Dev", "Esme", "Farid", "Greta", "Hiro", "Ife", "Jana", "Kofi", "Lucia", "Mads",
         "Nadia", "Oskar", "Paloma", "Quinn", "Rhea", "Soren", "Tamsin", "Ugo", "Vera", "Wen", "Ximena", "Yusuf",
         "Zofia")
LAST = ("Abara", "Bianchi", "Castellano", "Dubois", "Eriksen", "Fonseca", "Gupta", "Horvat", "Ivanova", "Jensen",
        "Kowalczyk", "Lindgren", "Moreno", "Nakamura", "Oyelaran", "Petrov", "Quintero", "Rahman", "Szabo", "Tanaka",
        "Umeh", "Varga", "Wojcik", "Yilmaz", "Zhou")
DATES = tuple(f"2025-{m:02d}-{d:02d}" for m in (3, 4, 5, 6) for d in (2, 9, 14, 21, 27))

THEMES: tuple[Theme, ...] = (
    Theme(
        name="library", org="Riverside Public Library", person="member", id_label="library card number",
        person_id="LC-######", record="loan", record_id="LN-#####", title_field="title",
        titles=("Middlemarch", "Kindred", "Solaris", "Piranesi", "The Dispossessed", "Beloved", "Ubik", "Hyperion"),
        info=(Info("due_date", "due date", DATES), Info("branch", "pickup branch", ("central", "north", "riverside")),
              Info("renewals_left", "number of renewals left", ("0", "1", "2", "3"))),
        gates=(Gate("status", ("active",), ("overdue", "lost")), Gate("format", ("print",), ("ebook", "audiobook")),
               Gate("hold_queue", ("empty",), ("waitlisted",))),
        acts=(Act("renew", "loan", "renew my {record} {id}", "renewed"),
              Act("extend", "loan", "extend the due date of my {record} {id}", "extended"),
              Act("report", "loan lost", "report my {record} {id} as lost", "reported as lost"),
              Act("transfer", "loan", "move my {record} {id} to another branch", "moved",
                  ("branch", ("central", "north", "riverside", "east"))),
              Act("pause", "loan reminders", "pause the reminders for my {record} {id}", "paused"),
              Act("convert", "loan", "switch my {record} {id} to the large-print edition", "switched"),
              Act("cancel", "loan renewal", "undo the last renewal of my {record} {id}", "undone"),
              Act("change", "loan branch", "pick up my {record} {id} at a different branch", "changed")),
        claim=Claim("return_status", "returned", ("not returned", "in transit"),
                    "I already returned the book on {record} {id}",
                    Act("waive", "late fee", "remove the late fee on my {record} {id}", "removed")),
        bills=Bills("fine", "FN-####", 0.5, 14.0, Act("pay", "fines", "pay all my open fines", "paid")),
        options=Options("study room", "RM-###", "branch", ("central", "north", "riverside", "east"), "seats",
                        (2, 4, 6, 8, 10), "for {n} people", Act("book", "study room", "book a study room", "booked"),
                        "date"),
        topics=("I want to file a complaint about how a staff member at the branch treated me over {record} {id}.",
                "I'd like to dispute the damage charge on {record} {id}; the book was already damaged when I got it.",
                "I need to talk to someone about a discrimination complaint involving {record} {id}."),
        decoy="branch hours", onfile="payment card", onfile_id="card_####"),
    Theme(
        name="utility", org="Brightwater Energy", person="customer", id_label="customer number",
        person_id="{first}_{last}_####", record="service point", record_id="SP#######", title_field="address",
        titles=("14 Alder Way", "9 Quarry Lane", "201 Harbor St", "77 Birch Rd", "5 Kiln Court", "38 Mill Row"),
        info=(Info("meter_type", "meter type", ("smart", "analog", "prepaid")),
              Info("tariff", "tariff", ("green", "flex", "fixed", "night saver")),
              Info("next_reading", "next meter reading date", DATES)),
        gates=(Gate("supply_status", ("connected",), ("disconnected", "pending removal")),
               Gate("contract", ("variable",), ("fixed-term",)),
               Gate("account_standing", ("good",), ("in arrears",))),
        acts=(Act("suspend", "supply", "pause the supply at my {record} {id}", "paused"),
              Act("change", "tariff", "move my {record} {id} to another tariff", "changed",
                  ("tariff", ("green", "flex", "fixed", "night saver"))),
              Act("schedule", "meter visit", "get a technician to check the meter at {record} {id}", "scheduled"),
              Act("request", "credit", "get a credit on my {record} {id}", "requested"),
              Act("transfer", "service point", "move the contract for {record} {id} to my new home", "moved"),
              Act("close", "service point", "close my {record} {id}", "closed"),
              Act("update", "meter reading", "submit a meter reading for {record} {id}", "submitted",
                  ("reading", ("04512", "10877", "22103", "31950"))),
              Act("enable", "smart meter", "switch {record} {id} to smart readings", "switched")),
        claim=Claim("reading_status", "submitted", ("missing", "estimated"),
                    "I already submitted my meter reading for {record} {id}",
                    Act("waive", "estimate fee", "take the estimate fee off {record} {id}", "taken off")),
        bills=Bills("bill", "BL-#####", 38.0, 142.0, Act("pay", "balance", "pay all my open bills", "paid")),
        options=Options("install slot", "SL-####", "area", ("north", "south", "east", "west"), "window_hours",
                        (2, 3, 4, 6), "with a window of at least {n} hours",
                        Act("book", "install slot", "book an installation slot", "booked"), "week"),
        topics=("I want to report a gas smell near the meter at {record} {id}.",
                "I'd like to make a formal complaint about a technician who visited {record} {id}.",
                "I need to dispute the estimated bills on {record} {id}; I think the meter is faulty."),
        decoy="outage map", onfile="bank mandate", onfile_id="DD-#####"),
    Theme(
        name="bank", org="Northgate Savings", person="client", id_label="client id", person_id="C#######",
        record="account", record_id="AC-####-####", title_field="nickname",
        titles=("Everyday", "Rainy day", "Holiday fund", "Joint household", "Business reserve", "Kids savings"),
        info=(Info("interest_rate", "interest rate", ("0.5%", "1.25%", "2.1%", "3.4%")),
              Info("statement_day", "statement day", ("1st", "8th", "15th", "28th")),
              Info("branch_code", "branch code", ("NG-101", "NG-214", "NG-330"))),
        gates=(Gate("state", ("open",), ("frozen", "closing")), Gate("type", ("savings",), ("fixed deposit",)),
               Gate("kyc", ("complete",), ("expired",))),
        acts=(Act("freeze", "account", "freeze my {record} {id}", "frozen"),
              Act("close", "account", "close my {record} {id}", "closed"),
              Act("order", "checkbook", "order a new checkbook for {record} {id}", "ordered"),
              Act("raise", "transfer limit", "raise the daily transfer limit on {record} {id}", "raised",
                  ("limit", ("2000", "5000", "10000"))),
              Act("rename", "account", "rename my {record} {id}", "renamed",
                  ("nickname", ("Savings pot", "Travel", "Emergency"))),
              Act("enable", "overdraft", "turn on the overdraft for {record} {id}", "turned on"),
              Act("add", "joint holder", "add my partner as a joint holder on {record} {id}", "added",
                  ("holder_name", ("Sam Rivera", "Ola Berg", "Ana Petrov"))),
              Act("cancel", "standing order", "stop the standing order on {record} {id}", "stopped")),
        claim=Claim("deposit_status", "cleared", ("pending", "returned"),
                    "the deposit I made into {record} {id} already cleared",
                    Act("refund", "overdraft fee", "refund the overdraft fee on {record} {id}", "refunded")),
        bills=Bills("card installment", "IN-#####", 25.0, 410.0,
                    Act("pay", "installments", "pay off my open card installments", "paid")),
        options=Options("savings plan", "SPL-###", "term", ("3 months", "6 months", "12 months", "24 months"),
                        "min_deposit", (100, 250, 500, 1000), "with a minimum deposit of at most {n} dollars",
                        Act("open", "savings plan", "open a savings plan", "opened"), "currency"),
        topics=("I want to report fraud: there are payments on {record} {id} that I never made.",
                "I need to talk to someone about a bereavement; the holder of {record} {id} has passed away.",
                "I'd like to file a formal complaint about how my mortgage application was handled."),
        decoy="exchange rates", onfile="linked account", onfile_id="LA-####"),
    Theme(
        name="hr_it", org="Halden Group People & IT", person="employee", id_label="employee number",
        person_id="E#####", record="leave request", record_id="LR-#####", title_field="leave_type",
        titles=("annual leave", "parental leave", "sick leave", "study leave", "unpaid leave"),
        info=(Info("start_date", "start date", DATES), Info("approver", "approver", ("M. Okafor", "J. Lind", "T. Ruiz")),
              Info("days", "number of days", ("2", "3", "5", "10"))),
        gates=(Gate("approval", ("pending",), ("approved", "rejected")), Gate("payroll_lock", ("open",), ("locked",)),
               Gate("balance_check", ("sufficient",), ("insufficient",))),
        acts=(Act("cancel", "leave request", "cancel my {record} {id}", "cancelled"),
              Act("submit", "leave request", "resubmit my {record} {id}", "resubmitted"),
              Act("amend", "leave request", "shorten my {record} {id} by a day", "amended"),
              Act("extend", "leave request", "add two days to my {record} {id}", "extended"),
              Act("attach", "medical note", "attach my medical note to {record} {id}", "attached"),
              Act("reassign", "approver", "send my {record} {id} to a different approver", "reassigned",
                  ("approver", ("M. Okafor", "J. Lind", "T. Ruiz"))),
              Act("convert", "leave request", "turn my {record} {id} into unpaid leave", "converted"),
              Act("split", "leave request", "split my {record} {id} into two shorter periods", "split")),
        claim=Claim("manager_signoff", "signed", ("unsigned", "returned"),
                    "my manager already signed off on {record} {id}",
                    Act("expedite", "leave request", "fast-track {record} {id}", "fast-tracked")),
        bills=Bills("expense claim", "EX-####", 12.0, 260.0,
                    Act("reimburse", "expenses", "get reimbursed for all my open expense claims", "reimbursed")),
        options=Options("laptop model", "LT-###", "os", ("Windows", "macOS", "Linux"), "ram_gb", (8, 16, 32, 64),
                        "with at least {n} GB of memory",
                        Act("order", "laptop", "order a replacement laptop", "ordered"), "department"),
        topics=("I want to report harassment by a colleague; it's related to {record} {id}.",
                "I need to raise a grievance about how {record} {id} was handled by my manager.",
                "I'd like to talk to someone about a whistleblowing concern."),
        decoy="holiday calendar", onfile="cost center", onfile_id="CC-###"),
    Theme(
        name="insurance", org="Meridian Mutual", person="policyholder", id_label="policyholder number",
        person_id="PH-######", record="policy", record_id="POL-@@#####", title_field="cover",
        titles=("home contents", "car comprehensive", "travel annual", "pet", "renters"),
        info=(Info("renewal_date", "renewal date", DATES), Info("excess", "excess", ("$100", "$250", "$500", "$1000")),
              Info("premium_plan", "premium plan", ("monthly", "quarterly", "annual"))),
        gates=(Gate("policy_status", ("in force",), ("lapsed", "under review")),
               Gate("claims_open", ("none",), ("one open",)), Gate("cooling_off", ("ended",), ("active",))),
        acts=(Act("cancel", "policy", "cancel my {record} {id}", "cancelled"),
              Act("add", "named driver", "add my daughter as a named driver on {record} {id}", "added",
                  ("driver_name", ("Lea Moreno", "Tom Jensen", "Rui Tanaka"))),
              Act("raise", "excess", "raise the excess on my {record} {id}", "raised",
                  ("excess", ("$250", "$500", "$1000"))),
              Act("pause", "policy", "pause my {record} {id} while I'm abroad", "paused"),
              Act("upgrade", "cover", "upgrade the cover on {record} {id}", "upgraded"),
              Act("issue", "certificate", "get a new certificate for {record} {id}", "issued"),
              Act("switch", "premium plan", "switch {record} {id} to annual payments", "switched"),
              Act("remove", "named driver", "take my son off {record} {id} as a driver", "updated")),
        claim=Claim("payment_status", "received", ("missed", "bounced"),
                    "I already paid the overdue premium on {record} {id}",
                    Act("reinstate", "policy", "reinstate my {record} {id}", "reinstated")),
        bills=Bills("premium installment", "PI-#####", 18.0, 160.0,
                    Act("pay", "premiums", "pay all my outstanding premium installments", "paid")),
        options=Options("repair garage", "GR-###", "town", ("Ashby", "Brook", "Calder", "Dunmore"), "rating",
                        (3, 4, 5), "rated at least {n} stars",
                        Act("assign", "repair garage", "send my car to a repair garage", "assigned"), "postcode"),
        topics=("I'd like to make a complaint and escalate my rejected claim on {record} {id} to the ombudsman.",
                "Someone has been injured and I need to report a liability claim on {record} {id}.",
                "I think {record} {id} was mis-sold to me and I want to dispute it."),
        decoy="claim guides", onfile="bank account", onfile_id="BA-####"),
    Theme(
        name="clinic", org="Lakeside Family Clinic", person="patient", id_label="patient number",
        person_id="P-######", record="appointment", record_id="APT######", title_field="clinician",
        titles=("Dr. Amadi", "Dr. Brenner", "Dr. Castillo", "Nurse Ito", "Dr. Varga"),
        info=(Info("time", "time", ("08:30", "10:15", "13:00", "15:45", "17:20")),
              Info("room", "room", ("2A", "3C", "4B", "1F")),
              Info("visit_type", "visit type", ("check-up", "vaccination", "follow-up", "blood test"))),
        gates=(Gate("booking_state", ("scheduled",), ("checked in", "completed")),
               Gate("referral", ("on file",), ("missing",)), Gate("notice_hours", ("48+",), ("under 24",))),
        acts=(Act("cancel", "appointment", "cancel my {record} {id}", "cancelled"),
              Act("reschedule", "appointment", "move my {record} {id} to next week", "moved"),
              Act("confirm", "appointment", "confirm my {record} {id}", "confirmed"),
              Act("switch", "clinician", "see a different doctor for {record} {id}", "switched",
                  ("clinician", ("Dr. Amadi", "Dr. Brenner", "Dr. Castillo"))),
              Act("request", "interpreter", "get an interpreter for {record} {id}", "requested",
                  ("language", ("Polish", "Arabic", "Portuguese"))),
              Act("convert", "appointment", "make {record} {id} a video visit", "converted"),
              Act("add", "appointment note", "add a note about my allergies to {record} {id}", "added"),
              Act("request", "reminder call", "get a reminder call before {record} {id}", "set up")),
        claim=Claim("insurer_approval", "approved", ("pending", "declined"),
                    "my insurer already approved {record} {id}",
                    Act("waive", "deposit", "drop the deposit for {record} {id}", "dropped")),
        bills=Bills("copay", "CP-####", 10.0, 75.0, Act("pay", "copays", "pay all my open copays", "paid")),
        options=Options("appointment slot", "SLT-####", "site", ("Lakeside", "Hillview", "Old Town"), "minutes",
                        (15, 20, 30, 45), "of at least {n} minutes",
                        Act("book", "appointment slot", "book an appointment", "booked"), "day"),
        topics=("I've had chest pains since this morning and I'm worried about {record} {id}.",
                "I want to make a formal complaint about the care I got at {record} {id}.",
                "I need to talk to someone about my medical records being shared without my consent."),
        decoy="clinic notices", onfile="insurance plan", onfile_id="INS-#####"),
    Theme(
        name="school", org="Westbrook Community College", person="student", id_label="student id",
        person_id="S#######", record="enrollment", record_id="EN-#####", title_field="course",
        titles=("Statistics I", "Organic Chemistry", "Modern Poetry", "Macroeconomics", "Data Structures"),
        info=(Info("section", "section", ("A", "B", "C", "evening")),
              Info("credits", "number of credits", ("2", "3", "4")),
              Info("instructor", "instructor", ("Prof. Hale", "Dr. Osei", "Prof. Marin"))),
        gates=(Gate("term_phase", ("add/drop",), ("locked", "graded")),
               Gate("prerequisite", ("met",), ("not met",)), Gate("hold", ("none",), ("financial hold",))),
        acts=(Act("drop", "enrollment", "drop my {record} {id}", "dropped"),
              Act("switch", "section", "switch {record} {id} to another section", "switched",
                  ("section", ("A", "B", "C", "evening"))),
              Act("audit", "enrollment", "change my {record} {id} to audit", "changed"),
              Act("defer", "enrollment", "defer my {record} {id} to next term", "deferred"),
              Act("request", "extension", "get an extension on the final project for {record} {id}", "requested"),
              Act("withdraw", "enrollment", "withdraw from {record} {id}", "withdrawn"),
              Act("add", "lab seat", "add a lab seat to {record} {id}", "added"),
              Act("change", "grading option", "take {record} {id} pass/fail", "changed")),
        claim=Claim("tuition_status", "paid", ("unpaid", "partial"),
                    "I already paid the tuition for {record} {id}",
                    Act("remove", "registration hold", "lift the late-registration fee on {record} {id}", "lifted")),
        bills=Bills("tuition installment", "TU-####", 120.0, 900.0,
                    Act("pay", "tuition", "pay all my open tuition installments", "paid")),
        options=Options("course section", "SEC-###", "campus", ("main", "downtown", "online"), "seats_left",
                        (1, 3, 5, 10), "with at least {n} seats left",
                        Act("enroll", "course section", "enroll in a course section", "enrolled"), "course"),
        topics=("I need to report academic misconduct I saw in {record} {id}.",
                "I want to appeal my final grade in {record} {id}.",
                "I need to talk to someone about a disability accommodation for {record} {id}."),
        decoy="campus events", onfile="financial aid award", onfile_id="AID-####"),
    Theme(
        name="car_rental", org="Roadway Rentals", person="renter", id_label="renter number",
        person_id="R-{last}-###", record="rental", record_id="RT####@@", title_field="vehicle",
        titles=("compact hatchback", "midsize sedan", "7-seat van", "electric crossover", "pickup truck"),
        info=(Info("pickup_time", "pickup time", ("08:00", "09:30", "12:00", "16:30")),
              Info("mileage_cap", "mileage cap", ("200 mi/day", "unlimited", "150 mi/day")),
              Info("return_branch", "return branch", ("airport", "downtown", "harbor"))),
        gates=(Gate("rental_state", ("booked",), ("picked up", "returned")),
               Gate("license_check", ("verified",), ("expired",)), Gate("prepaid", ("no",), ("yes",))),
        acts=(Act("cancel", "rental", "cancel my {record} {id}", "cancelled"),
              Act("extend", "rental", "keep the car from {record} {id} two more days", "extended"),
              Act("add", "driver", "add a second driver to {record} {id}", "added",
                  ("driver_name", ("Ines Cruz", "Mark Hall", "Yuki Sato"))),
              Act("upgrade", "vehicle", "upgrade the car on {record} {id}", "upgraded"),
              Act("change", "return branch", "return the car from {record} {id} at another branch", "changed",
                  ("branch", ("airport", "downtown", "harbor"))),
              Act("add", "child seat", "add a child seat to {record} {id}", "added"),
              Act("remove", "insurance waiver", "drop the damage waiver on {record} {id}", "dropped"),
              Act("add", "toll pass", "add a toll pass to {record} {id}", "added")),
        claim=Claim("fuel_level", "full", ("half", "quarter"),
                    "I already returned the car from {record} {id} with a full tank",
                    Act("waive", "refuel charge", "remove the refuelling charge on {record} {id}", "removed")),
        bills=Bills("toll charge", "TL-#####", 2.5, 28.0, Act("pay", "tolls", "pay all my open toll charges", "paid")),
        options=Options("car", "CAR-####", "branch", ("airport", "downtown", "harbor", "station"), "seats",
                        (2, 4, 5, 7), "with at least {n} seats",
                        Act("reserve", "car", "reserve a car", "reserved"), "date"),
        topics=("I was in an accident with the car from {record} {id} and someone was hurt.",
                "I want to dispute a damage charge on {record} {id}; the dent was there when I picked it up.",
                "The car from {record} {id} was stolen last night and I need to report it."),
        decoy="branch directory", onfile="driver card", onfile_id="DC-####"),
    Theme(
        name="gym", org="Pulse Fitness Clubs", person="member", id_label="membership number",
        person_id="PF######", record="membership", record_id="MS-######", title_field="plan",
        titles=("off-peak", "all-access", "student", "family", "swim only"),
        info=(Info("home_club", "home club", ("Eastside", "Central", "Riverside")),
              Info("billing_day", "billing day", ("1st", "10th", "20th")),
              Info("guest_passes", "number of guest passes", ("0", "2", "4"))),
        gates=(Gate("membership_status", ("active",), ("frozen", "cancelled")),
               Gate("contract_term", ("rolling",), ("12-month",)), Gate("dues", ("paid up",), ("overdue",))),
        acts=(Act("freeze", "membership", "freeze my {record} {id} for a month", "frozen"),
              Act("cancel", "membership", "cancel my {record} {id}", "cancelled"),
              Act("upgrade", "membership", "upgrade my {record} {id}", "upgraded"),
              Act("transfer", "membership", "move my {record} {id} to another club", "moved",
                  ("club", ("Eastside", "Central", "Riverside"))),
              Act("add", "guest pass", "add a guest pass to {record} {id}", "added"),
              Act("change", "billing day", "change the billing day of {record} {id}", "changed",
                  ("billing_day", ("1st", "10th", "20th"))),
              Act("issue", "key fob", "get a replacement key fob for {record} {id}", "issued"),
              Act("add", "family member", "add my partner to {record} {id}", "added")),
        claim=Claim("medical_note", "on file", ("missing", "expired"),
                    "I already sent in the doctor's note for {record} {id}",
                    Act("waive", "freeze fee", "waive the freeze fee on {record} {id}", "waived")),
        bills=Bills("monthly due", "DU-####", 19.0, 79.0, Act("pay", "dues", "pay all my open dues", "paid")),
        options=Options("class", "CL-####", "club", ("Eastside", "Central", "Riverside", "Northgate"), "spots",
                        (1, 2, 4, 6), "with at least {n} open spots",
                        Act("book", "class", "book a class", "booked"), "day"),
        topics=("I got injured on a machine at the club and I want to report it; it's on {record} {id}.",
                "I want to complain about a trainer's behaviour towards me.",
                "I'd like to dispute charges taken from me after I cancelled {record} {id}."),
        decoy="club timetable", onfile="payment card", onfile_id="pm_####"),
    Theme(
        name="parking", org="Cityline Parking Services", person="permit holder", id_label="holder id",
        person_id="H-#####", record="permit", record_id="PK-@####", title_field="zone",
        titles=("zone A", "zone B", "zone C", "harbor lot", "station garage"),
        info=(Info("plate", "license plate", ("KL-204", "ZX-881", "MN-517", "QR-090")),
              Info("expiry", "expiry date", DATES), Info("bay", "bay number", ("12", "48", "103"))),
        gates=(Gate("permit_state", ("valid",), ("expired", "revoked")),
               Gate("residency_proof", ("verified",), ("outdated",)), Gate("tickets_unpaid", ("0",), ("2", "3"))),
        acts=(Act("renew", "permit", "renew my {record} {id}", "renewed"),
              Act("cancel", "permit", "cancel my {record} {id}", "cancelled"),
              Act("change", "permit vehicle", "put a different car on {record} {id}", "changed",
                  ("plate", ("KL-204", "ZX-881", "MN-517"))),
              Act("replace", "permit", "get a replacement for my {record} {id}", "replaced"),
              Act("move", "permit zone", "move my {record} {id} to another zone", "moved",
                  ("zone", ("zone A", "zone B", "zone C"))),
              Act("add", "visitor days", "add visitor days to {record} {id}", "added"),
              Act("suspend", "permit", "suspend my {record} {id} while I'm away", "suspended"),
              Act("switch", "permit billing", "pay for {record} {id} monthly instead", "switched")),
        claim=Claim("display_status", "displayed", ("not seen", "expired"),
                    "my permit {id} was displayed when I got the ticket",
                    Act("cancel", "parking ticket", "cancel the ticket I got on {record} {id}", "cancelled")),
        bills=Bills("parking ticket", "TK-#####", 25.0, 90.0,
                    Act("pay", "tickets", "pay all my open parking tickets", "paid")),
        options=Options("garage space", "GS-###", "garage", ("Market St", "Pier 3", "Union Sq", "Elm Ave"),
                        "height_cm", (180, 200, 210, 230), "with clearance of at least {n} cm",
                        Act("reserve", "garage space", "reserve a garage space", "reserved"), "month"),
        topics=("My car was towed from bay {id} and it was damaged; I need to report it.",
                "I want to appeal a ticket in court; it's about {record} {id}.",
                "An enforcement officer was abusive to me and I want to complain."),
        decoy="street cleaning schedule", onfile="payment card", onfile_id="cc_####"),
)
