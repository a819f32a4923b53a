"""The contract, followed: schemathesis's stateful phase chains requests along the links
in openapi.yaml (ledger.api.links), feeding each answer's values to the next request.

POST /players gives a name its deposits, balance and statement take; POST /tables a
table its seats, casts, stakes and reads take; a lay's bet id is what a cover or a
refusal names; a round's number what a dispute names; a dispute's id what its
resolution names; a receipt's position what an inclusion proof takes. Only the links
the file declares drive it: schemathesis's own inference is off, so that what runs is
what a client reading openapi.yaml would follow.

Each scenario starts on a fresh copy of contractkit's seeded club (tables t1 and t2,
players ann, bob and cat) and sends every request with the setter's token. The checks,
on every answer, are schemathesis's full set less `positive_data_acceptance` (see
test_contract: a valid request is refused with 422 whenever the game's rules forbid it
at that moment), plus test_contract's problem-details check:
  - not_a_server_error; status_code, content_type, response_headers and
    response_schema conformance; negative_data_rejection; missing_required_header;
    unsupported_method and allow_header_conformance;
  - ignored_auth: the same request without the token gets a 401;
  - use_after_free and ensure_resource_availability: what a write made can be read;
  - object_level_authorization (a no-op here: one identity sends everything).
The test fails too if any of these did not run, or if the sequences reached fewer than
REACHED operations: a schemathesis upgrade or a broken link must not quietly thin it.
Bounded and deterministic: derandomized, SCENARIOS sequences of at most STEPS requests
(about 500 requests, 20-30 s).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from ledger.api.links import LINKS
from ledger.store import db
from tests.api.contractkit import OPENAPI, SETTINGS, api_on, problem_details, seed

SCENARIOS = 40
"""Sequences of requests, each on a fresh club."""
STEPS = 10
"""Requests in a sequence, at most."""
REACHED = 30
"""Operations the sequences must reach, of the 40 the links lead to (they reach 39-40)."""
CHECKS = {
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
    "object_level_authorization",
}
"""schemathesis's checks that must run (its full set but positive_data_acceptance)."""


def config(token: str = "") -> schemathesis.Config:
    """test_contract's configuration, the stateful phase driven by the links alone, every
    request with `token` (the setter's) as its bearer."""
    return schemathesis.Config.from_dict(
        {
            **SETTINGS,
            # Declared, so that ignored_auth knows it for the caller's, not a made-up one.
            "auth": {"openapi": {"bearer": {"bearer": token}}},
            "phases": {
                "stateful": {
                    "max-steps": STEPS,
                    # The links openapi.yaml declares, not what schemathesis would guess.
                    "inference": {"algorithms": []},
                }
            },
        }
    )


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """test_contract's club, seeded once, and a setter's token in it."""
    path = tmp_path_factory.mktemp("stateful") / "seeded.sqlite3"
    engine = db.make_engine(f"sqlite:///{path}")
    db.upgrade(engine)
    engine.dispose()
    for api in api_on(path):
        seed(api)
        token = api.client("setter", "bank").token
    assert token is not None
    return path, token


def test_the_links_reach_most_operations() -> None:
    """What the stateful phase can reach: every operation but those that take nothing
    from an earlier answer (the roots, and the reads of the whole log)."""
    schema = schemathesis.openapi.from_path(OPENAPI, config=config())
    schema.as_state_machine()
    unreached = {r.ok().label for r in schema.get_all_operations()} - set(
        schema.operations_with_incoming_links()
    )
    assert unreached == {
        "POST /players",
        "POST /tables",
        "GET /audit/head",
        "GET /audit/verify",
        "GET /log/checkpoint",
        "GET /log/key",
        "GET /log/gossip",
        # the club's books: reads of the whole log, for a period
        *(f"GET /reports/{book}{csv}" for book in ("exceptions", "authentication", "significant")
          for csv in ("", ".csv")),
    }  # fmt: skip
    assert len(LINKS) > 20


def test_sequences_along_the_links_answer_as_documented(
    seeded: tuple[Path, str], tmp_path: Path
) -> None:
    source, token = seeded
    schema = schemathesis.openapi.from_path(OPENAPI, config=config(token))
    copies = iter(range(1_000_000))
    ran: set[str] = set()
    reached: set[str] = set()

    def checks_that_ran(ctx: Any, response: Any, case: schemathesis.Case) -> None:
        ran.update(check.__name__ for check in ctx.internals.checks)
        reached.add(case.operation.label)

    class Club(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            path = tmp_path / f"club{next(copies)}.sqlite3"
            with closing(sqlite3.connect(source)) as s, closing(sqlite3.connect(path)) as c:
                s.backup(c)
            self._apps = api_on(path)
            self.app = next(self._apps).app
            # ignored_auth sends its request again through the schema's transport.
            self.schema.app = self.app

        def teardown(self) -> None:
            for _ in self._apps:  # closes the store
                pass

        def before_call(self, case: schemathesis.Case) -> None:
            case.operation.app = self.app

        def validate_response(
            self, response: Any, case: schemathesis.Case, *args: Any, **kwargs: Any
        ) -> None:
            case.validate_response(
                response,
                excluded_checks=[positive_data_acceptance],
                additional_checks=[problem_details, checks_that_ran],
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    Club.run(
        settings=settings(
            max_examples=SCENARIOS,
            stateful_step_count=STEPS,
            derandomize=True,
            database=None,
            deadline=None,
        )
    )
    assert ran >= CHECKS, CHECKS - ran
    assert len(reached) >= REACHED, sorted(reached)
