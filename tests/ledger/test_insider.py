"""The insider's rewrites the witnessing tests rely on (tests/ledger/attackkit.py, and
tamperkit's whole log re-signed with the bank's own key), on SQLite and PostgreSQL:
each must leave a log that is whole by the bank's own lights, or the tests that show
only witnesses and receipts catch it would be showing something weaker. So every seal
commits the heads its events make (ledger.store.log.sealing), one seal per checkpoint
at its size, heads_log holds the heads each seal commits, and `hazard verify --deep`
passes; and the log is not the one played."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ledger.store.eventstore import EventStore
from ledger.store.log import sealing
from tests.ledger import attackkit
from tests.ledger.cosignkit import sizes
from tests.ledger.tamperkit import Log, hazard_verify, play, unguarded
from tests.ledger.tamperkit import whole_log_rehashed_and_resigned as resigned
from tests.signing import SIGNER


@pytest.fixture
def log(engine: sa.Engine, tmp_path: Path) -> Iterator[Log]:
    """The evening, played on attackkit's clock (the consistent rewrite plays it again
    on the same clock)."""
    store = EventStore(engine, clock=attackkit.clock(), signer=SIGNER)
    try:
        play(store)
    finally:
        store.close()
    with engine.connect() as conn:
        size, note = conn.execute(
            sa.text("SELECT size, note FROM checkpoints ORDER BY size DESC LIMIT 1")
        ).one()
    yield Log(engine, size, note, tmp_path)


def _resigned(log: Log) -> str:
    """tamperkit's rewrite with the bank's own key, and the read models rebuilt after
    it, as the attacks rebuild them."""
    with unguarded(log) as conn:
        resigned(log, conn, SIGNER)
    return attackkit._rebuilt(log)


INSIDERS: dict[str, Callable[[Log], str]] = {
    **attackkit.ATTACKS,
    "the whole log rehashed and re-signed": _resigned,
}


@pytest.mark.parametrize("insider", list(INSIDERS))
def test_an_insiders_rewrite_leaves_every_seal_as_the_bank_would_have_made_it(
    log: Log, insider: str
) -> None:
    newest = INSIDERS[insider](log)
    assert newest != log.receipt  # something changed
    rows = log.rows()
    checked = list(sealing.check(iter(rows)))  # raises at the first seal that is not
    assert rows[-1].stream == "log"  # a write's seal last: no events after it
    assert [row.position for row, _, _ in checked] == sizes(log.engine)
    with log.engine.connect() as conn:
        for row, _, _ in checked:
            stored = sealing.heads_at(conn, row.position)
            assert (stored.root().hex(), len(stored)) == (row.event().root, row.event().heads)
    deep = hazard_verify(log, "--deep")
    assert deep.exit_code == 0, deep.output
