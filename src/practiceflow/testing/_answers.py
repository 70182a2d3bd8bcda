"""The API's answers in a test (:class:`ScriptedAnswers`, a ``requests`` adapter under a
real client): first the answers written in the test (method, path, query; possibly a fault:
``drop``, ``refuse``, any status), else the cassette. A request nothing answers is refused
as a connection that never opened, so no write is in doubt because of the test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import requests
from requests.adapters import BaseAdapter

from practiceflow.testing._case import Answer
from practiceflow.testing._cassette import Cassette, RecordedRequest, RecordedResponse
from practiceflow.testing._replay import (
    REPLAY_BASE_URL,
    CassetteMismatch,
    CassettePlayer,
    answer_response,
    mounted_session,
    one_line,
    recorded_request,
)


@dataclass(frozen=True)
class SentRequest:
    """One request a case sent, the step it was sent for (``""`` for a module's own test), and
    how it was answered: ``answers[i]``, ``cassette``, ``server`` or ``nothing``."""

    step: str
    request: RecordedRequest
    answered: str


def _query_matches(wanted: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    return all(name in sent and str(sent[name]) == str(value) for name, value in wanted.items())


class ScriptedAnswers(BaseAdapter):
    """Answers a case's requests (see the module docstring); ``step`` is the step they are
    sent for now (set by the case's runner), ``problems`` the requests nothing answered."""

    def __init__(
        self,
        answers: Sequence[Answer] = (),
        cassette: Cassette | None = None,
        *,
        normalize: Callable[[RecordedRequest], RecordedRequest] | None = None,
        base_url: str = REPLAY_BASE_URL,
        fallback: BaseAdapter | None = None,
    ) -> None:
        super().__init__()
        self.base_url = base_url
        self.fallback = fallback
        self.answers = list(answers)
        self._left = [answer.times for answer in self.answers]
        self.player = (
            CassettePlayer(cassette, base_url=REPLAY_BASE_URL, normalize=normalize)
            if cassette is not None
            else None
        )
        self.step = ""
        self.sent: list[SentRequest] = []
        self.problems: list[str] = []

    def session(self) -> requests.Session:
        """A session whose every request this adapter answers."""
        return mounted_session(self)

    def _written(self, request: RecordedRequest) -> int | None:
        for index, answer in enumerate(self.answers):
            if (
                self._left[index] > 0
                and answer.method == request.method
                and answer.path == request.path
                and _query_matches(answer.query, request.query)
            ):
                return index
        return None

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        """Answer one request, or refuse it as never sent."""
        raw = recorded_request(request, self.base_url)
        index = self._written(raw)
        source = "server" if self.fallback else "cassette" if self.player else "nothing"
        sent = SentRequest(self.step, raw, source if index is None else f"answers[{index}]")
        self.sent.append(sent)
        where = f"step {self.step}: " if self.step else ""
        if index is not None:
            self._left[index] -= 1
            answer = self.answers[index]
            if answer.refuse:
                raise requests.ConnectTimeout(f"refused by the test ({answer.where})")
            if answer.drop:
                raise requests.ReadTimeout(f"no answer, by the test ({answer.where})")
            recorded = RecordedResponse(answer.status, dict(answer.headers), answer.body)
            return answer_response(recorded, request)
        if self.fallback is not None:
            return self.fallback.send(request, *args, **kwargs)
        if self.player is not None:
            try:
                return self.player.send(request, *args, **kwargs)
            except CassetteMismatch as exc:
                self.sent[-1] = replace(sent, answered="nothing")
                self.problems.append(where + str(exc))
                raise requests.ConnectTimeout("no recorded answer") from None
        self.problems.append(
            f"{where}{one_line(raw)} has no answer: write one under given.answers "
            "or record a cassette (practiceflow test --record)"
        )
        raise requests.ConnectTimeout("no answer written")

    def assign_unclaimed(self, step: str) -> None:
        """Give the requests sent outside any step so far (a step's checks, before its
        first journal point) to ``step``."""
        self.sent = [replace(sent, step=step) if not sent.step else sent for sent in self.sent]

    def close(self) -> None:
        """Nothing to release."""

    def unused(self) -> list[str]:
        """Answers written in the test that no request asked for (a recorded exchange left
        unplayed is not one: a cassette may serve cases that stop early, or a fault)."""
        return [
            f"answers[{index}] {answer.describe()} ({answer.where}) was never asked for"
            for index, answer in enumerate(self.answers)
            if self._left[index] > 0
        ]
