"""The answers the sandbox may give where the spec is silent or ambiguous. Each **topic** has a
few **answers**: the first is the default (GUESSES.md's guess), one *hostile* (least convenient
for a client); a run picks one per topic (``--variant``, ``/_admin/variants``) and routes ask
:meth:`Variants.pick`. GUESSES.md's "Variants" table is :func:`markdown_table` (a test checks).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    """One open question of the spec; ``answers`` maps each answer the sandbox can play to
    what it then does (the first is the default)."""

    name: str
    question: str
    answers: Mapping[str, str]
    hostile: str

    @property
    def default(self) -> str:
        """The answer played unless another is chosen."""
        return next(iter(self.answers))


def _page_size_topic(name: str, path: str) -> Topic:
    return Topic(
        f"page_size.{name}",
        f'Does `{path}` honour `pageSize` (spec 8: "where supported")?',
        {
            "honoured": "pages hold `pageSize` rows (default 50, at most 100).",
            "ignored": "`pageSize` is ignored: pages hold a fixed 20 rows and the envelope "
            "says `pageSize: 20`.",
        },
        "ignored",
    )


# fmt: off
TOPICS: tuple[Topic, ...] = (
    _page_size_topic("bills", "/bills/list"),
    _page_size_topic("contacts", "/contacts/list"),
    _page_size_topic("proposals", "/proposals/list"),
    _page_size_topic("leads", "/leads"),
    _page_size_topic("recurring", "/recurring-billing/list"),
    Topic("list_shape.recurring", "Is `/recurring-billing/list` paged at all?", {
        "envelope": "the `items` envelope, paged.",
        "plain": "a bare array of every schedule; `pageNumber` and `pageSize` are ignored "
                 "(every page is the whole list).",
    }, "plain"),
    Topic("field_case", "Letter case of ids the spec spells two ways (`billingId` / "
          "`billingID`, `runId` / `runID`, `entityId` / `entityID`, `clientId` / `clientID`).", {
        "ID": "`billingID`, `runID`, `entityID`, `clientID` in bills, bill rows, runs, "
              "entity details and `auth/validate`.",
        "Id": "`billingId`, `runId`, `entityId`, `clientId` in the same records.",
    }, "Id"),
    Topic("bill_rows", "Do bill list rows carry every field of the bill record?", {
        "full": "list rows are the whole bill record.",
        "slim": "list rows lack `entityKey`, `createdOn`, `billDetails` and `lineItems` "
                "(the client is named by `entityID` only).",
    }, "slim"),
    Topic("tax_precedence", "A bill line with both `taxAmount` and `taxPercent`: which wins?", {
        "percent": "`taxPercent` wins.",
        "amount": "`taxAmount` wins.",
    }, "percent"),
    Topic("rounding", "Are bill totals rounded per line or on the totals?", {
        "per_line": "each line's amount and tax are rounded to cents, totals are their sums "
                    "(3 x 33.333 at 10 % -> 109.98).",
        "per_total": "totals are computed from the unrounded lines, then rounded "
                     "(3 x 33.333 at 10 % -> 110.00).",
    }, "per_line"),
    Topic("entity_order", "Order of `/entities` rows under `lastUpdated`.", {
        "ascending": "`(lastUpdated, creation)` ascending.",
        "creation": "creation order, whatever `lastUpdated` says.",
        "descending": "newest `lastUpdated` first.",
    }, "descending"),
    Topic("end_date", "Is `endDate` of `/bills/list` inclusive?", {
        "inclusive": "bills dated `endDate` are listed.",
        "exclusive": "bills dated `endDate` are not listed.",
    }, "exclusive"),
    Topic("leads_in_entities", "Are leads listed by `/entities` or only by `/leads`?", {
        "listed": "`/entities` lists leads (status `Lead`) with clients.",
        "hidden": "`/entities` lists clients only; leads are in `/leads` alone.",
    }, "hidden"),
    Topic("status_case", "Letter case of status values (`Active`, `Lead`, `Accepted`, `Won`).", {
        "title": "`Active`, `Lead`, `Accepted`, `Won` ...",
        "upper": "`ACTIVE`, `LEAD`, `ACCEPTED`, `WON` ...",
    }, "upper"),
    Topic("test_marker", "How is a test delivery (`POST /webhooks/{id}/test`) marked?", {
        "isTest": "`data` holds `isTest: true` and a `message`.",
        "none": "no marker: `data` is empty.",
        "sample": "no marker: `data` holds made-up fields of the event (keys of no "
                  "record), like a real delivery.",
    }, "sample"),
    Topic("retry_timestamp", "What timestamp does a retried delivery carry?", {
        "resigned": "each attempt is signed afresh with the clock of that attempt.",
        "first_attempt": "every attempt carries the first attempt's timestamp and signature.",
        "first_attempt_late": "every attempt carries the first attempt's timestamp, set "
                              "two hours back: it plays a retry arriving hours later.",
    }, "first_attempt_late"),
    Topic("delivery_body", "Shape of a delivery body (ApiWebhookDeliveryEventDTO not shown).", {
        "nested": "`{eventId, event, occurredAt, webhookId, data: {...}}`.",
        "flat": "`{eventId, event, occurredAt, webhookId, ...resource fields}`.",
    }, "flat"),
    Topic("create_answer", "Body of a 201 to a create.", {
        "record": "the created record.",
        "id_only": "only the new record's key or id.",
        "empty": "no body (the `Location` header names the record).",
    }, "empty"),
    Topic("proposals_filter", "Does `/proposals/list` need `entityKey` (spec 4.2 shows "
          "`/proposals/list?entityKey=`; its query parameters are not shown)?", {
        "required": "`entityKey` is required: without it, or empty, the answer is 400.",
        "optional": "without `entityKey` every proposal of the practice is listed.",
    }, "required"),
    Topic("bill_range", "Does `/bills/list` need both ends of its bill-date range (spec 4.2 "
          "names `startDate` and `endDate`, not whether they are required)?", {
        "optional": "either end may be left out: the range is open on that side.",
        "required": "`startDate` and `endDate` are both required (400 without either).",
    }, "required"),
    Topic("problem_message", "Does a problem body carry `message` next to `detail`?", {
        "some": "`message` on 400 and 404 only.",
        "none": "never a `message`.",
        "all": "`message` on every problem.",
    }, "none"),
)
# fmt: on

_BY_NAME: Mapping[str, Topic] = {topic.name: topic for topic in TOPICS}
#: Preset names accepted by ``--variants`` (besides ``random:SEED``).
PRESETS: tuple[str, ...] = ("default", "hostile")


class Variants:
    """The answer chosen for each topic; immutable. ``chosen`` names those not playing
    their default; ValueError for an unknown topic or answer (listing the valid ones)."""

    def __init__(self, chosen: Mapping[str, str] | None = None) -> None:
        table = {topic.name: topic.default for topic in TOPICS}
        for name, answer in (chosen or {}).items():
            topic = _BY_NAME.get(name)
            if topic is None:
                valid = ", ".join(_BY_NAME)
                raise ValueError(f"variant: unknown topic {name!r}; valid topics are {valid}")
            if answer not in topic.answers:
                valid = ", ".join(topic.answers)
                raise ValueError(f"variant {name}: got {answer!r}; valid answers are {valid}")
            table[name] = answer
        self._table = table

    @classmethod
    def preset(cls, name: str) -> Variants:
        """``default``, ``hostile`` or ``random:SEED``; ValueError for any other name."""
        if name == "default":
            return cls()
        if name == "hostile":
            return cls({topic.name: topic.hostile for topic in TOPICS})
        if name.startswith("random:"):
            seed_text = name.partition(":")[2]
            if not seed_text.lstrip("-").isdigit():
                raise ValueError(f"variants: got {name!r}; expected random:SEED, SEED an integer")
            rng = random.Random(int(seed_text))  # noqa: S311 - a reproducible pick, no secret
            return cls({topic.name: rng.choice(list(topic.answers)) for topic in TOPICS})
        raise ValueError(f"variants: got {name!r}; valid presets are default, hostile, random:SEED")

    @classmethod
    def parse(cls, preset: str | None = None, pairs: Iterable[str] = ()) -> Variants:
        """A preset, then ``topic=answer`` pairs on top; ValueError for any bad one."""
        chosen = cls.preset(preset or "default").as_dict()
        for pair in pairs:
            name, sep, answer = pair.partition("=")
            if not sep:
                raise ValueError(f"variant: got {pair!r}; expected TOPIC=ANSWER")
            chosen[name.strip()] = answer.strip()
        return cls(chosen)

    def pick(self, topic: str) -> str:
        """The answer played for ``topic`` (KeyError for an unknown one: a typo in a route)."""
        return self._table[topic]

    def is_(self, topic: str, answer: str) -> bool:
        """Whether ``topic`` plays ``answer`` (which must be one of its answers)."""
        if answer not in _BY_NAME[topic].answers:  # a typo in a route must not pass silently
            raise KeyError(f"{topic} has no answer {answer!r}")
        return self._table[topic] == answer

    def as_dict(self) -> dict[str, str]:
        """Every topic and its answer."""
        return dict(self._table)

    def differences(self) -> dict[str, str]:
        """The topics not playing their default."""
        return {
            name: answer for name, answer in self._table.items() if answer != _BY_NAME[name].default
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Variants) and other._table == self._table

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._table.items())))

    def __repr__(self) -> str:
        return f"Variants({self.differences()!r})"


def single_variants() -> list[tuple[str, str]]:
    """Every ``(topic, answer)`` other than the defaults: the runs of ``make test-variants``."""
    return [
        (topic.name, answer)
        for topic in TOPICS
        for answer in topic.answers
        if answer != topic.default
    ]


def markdown_table() -> str:
    """The "Variants" table of GUESSES.md (generated; a test compares)."""
    lines = [
        "| Topic | Open question | Answers (first = default, **bold** = hostile) |",
        "|---|---|---|",
    ]
    for topic in TOPICS:
        answers = "<br>".join(
            (f"**`{name}`**" if name == topic.hostile else f"`{name}`") + f": {text}"
            for name, text in topic.answers.items()
        )
        lines.append(f"| `{topic.name}` | {topic.question} | {answers} |")
    return "\n".join(lines) + "\n"
