"""A Python client generated from openapi.yaml, as a club's programmer makes one: the
contract through openapi-python-client (offline, into a temporary directory), then
docs/api.md's evening and its disputes, and every other operation, through the
client against `hazard serve`.

Every answer is parsed by the client's own models and held to what the server sent
(`to_dict()` gives back the JSON, key for key): a model that drops a field, or reads an
answer as some other shape, fails here, as does a schema the generator cannot make
into a model (it stops on any warning)."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import pkgutil
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from click.testing import CliRunner

from ledger.api import contract
from ledger.cli import main
from tests.api.servekit import serving

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "openapi.yaml"
GUIDE = ROOT / "docs" / "api.md"
PACKAGE = "hazard_client"


# -- the contract as the generator names it ------------------------------------------


def _inline_model(schema: dict[str, Any]) -> bool:
    """Whether openapi-python-client makes a model (or an enum) of its own for a
    property with this schema, named for the schema holding it and the property."""
    if "$ref" in schema:
        return False
    if schema.get("type") == "object" or "enum" in schema:
        return True
    return any(_inline_model(s) for s in schema.get("anyOf", []) + schema.get("allOf", []))


def test_no_schema_is_named_as_the_generator_names_another_ones_property() -> None:
    """`Dispute.opened`, an object, becomes the model `DisputeOpened`: a schema of that
    name as well, and the generator drops `Dispute` and every answer holding it."""
    schemas = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))["components"]["schemas"]
    clashes = [
        f"{name}.{prop} and the schema {made}"
        for name, schema in schemas.items()
        for prop, held in schema.get("properties", {}).items()
        if _inline_model(held)
        and (made := name + "".join(w[:1].upper() + w[1:] for w in re.split(r"[_-]", prop)))
        in schemas
    ]
    assert clashes == []


def _may_be_null(schema: dict[str, Any]) -> bool:
    return bool(
        schema.get("nullable") or None in schema.get("enum", []) or schema.get("default", 0) is None
    )


def test_no_query_parameter_is_documented_as_null() -> None:
    """A query carries text: a parameter that may be null offers a client a value it
    cannot send (and the generator three enums for one)."""
    paths = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))["paths"]
    nullable = [
        f"{method.upper()} {path} {parameter['name']}"
        for path, item in paths.items()
        for method in contract.METHODS
        for parameter in item.get(method, {}).get("parameters", [])
        if parameter["in"] == "query" and _may_be_null(parameter["schema"])
    ]
    assert nullable == []


# -- the generated client ------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The client package, generated from openapi.yaml and imported."""
    where = tmp_path_factory.mktemp("client")
    config = where / "generator.yaml"
    # No formatter run over the generated code; a PDF read as the bytes it is (the
    # generator knows no application/pdf: a club's programmer tells it so, as here).
    config.write_text(
        "post_hooks: []\ncontent_type_overrides:\n  application/pdf: application/octet-stream\n"
    )
    ran = subprocess.run(
        [
            *(sys.executable, "-m", "openapi_python_client", "generate"),
            *("--path", str(OPENAPI), "--meta", "none", "--config", str(config)),
            *("--output-path", str(where / PACKAGE), "--fail-on-warning"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    sys.path.insert(0, str(where))
    try:
        importlib.import_module(f"{PACKAGE}.models")
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))
        for name in [n for n in sys.modules if n.split(".")[0] == PACKAGE]:
            del sys.modules[name]


@dataclass
class Club:
    """The served app's address, a client per token, and the operations called."""

    package: ModuleType
    base_url: str
    database_url: str
    clients: dict[str, Any] = field(default_factory=dict)
    called: set[str] = field(default_factory=set)

    def token(self, role: str, name: str) -> None:
        made = CliRunner().invoke(
            main,
            ["token", "create", "--role", role, "--name", name],
            env={"DATABASE_URL": self.database_url},
        )
        assert made.exit_code == 0, made.output
        self.clients[name] = self.package.AuthenticatedClient(
            base_url=self.base_url, token=made.stdout.strip()
        )

    def __call__(self, who: str, operation: str, *args: Any, answers: int = 0, **kw: Any) -> Any:
        """`operation` (`group.module` of the client's api package) as `who`, which
        `answers` that status (a POST 201, else 200, unless told); its answer as the
        client's model parsed it."""
        answers = answers or (201 if operation.split(".")[1].startswith("post_") else 200)
        self.called.add(operation)
        module = importlib.import_module(f"{PACKAGE}.api.{operation}")
        for _ in range(100):
            response = module.sync_detailed(*args, client=self.clients[who], **kw)
            # A heavy read holds its token's slot until the kernel holds nothing more for
            # the client, which `hazard serve` looks at again every 0.2 s on a connection
            # kept alive: the token's next heavy read right after it may be refused (429)
            # until then. A client retries, as the contract says.
            if response.status_code != 429:
                break
            time.sleep(0.05)
        assert response.status_code == answers, response.content
        parsed = response.parsed
        if response.headers["Content-Type"].endswith("json"):
            assert parsed.to_dict() == json.loads(response.content), operation
        elif response.headers["Content-Type"] == "application/pdf":  # its bytes, whole
            assert parsed == response.content and parsed.startswith(b"%PDF-"), operation
        else:  # an export's file
            assert parsed == response.content.decode(), operation
        return parsed


@pytest.fixture
def club(generated: ModuleType, tmp_path: Path) -> Iterator[Club]:
    with serving(tmp_path) as served:
        banner = served.banner()
        port = re.search(r"serving at http://127\.0\.0\.1:(\d+)", banner)
        setter = re.search(r"^\s+(hz_\S+)$", banner, re.M)
        assert port is not None and setter is not None, banner
        found = Club(
            generated,
            f"http://127.0.0.1:{port.group(1)}",
            f"sqlite:///{tmp_path / 'serve.sqlite3'}",
        )
        found.clients["setter"] = generated.AuthenticatedClient(
            base_url=found.base_url, token=setter.group(1)
        )
        found.clients["anyone"] = generated.Client(base_url=found.base_url)  # no token
        for role, name in [("croupier", "cecil"), ("auditor", "audrey")]:
            found.token(role, name)
        try:
            yield found
        finally:
            for client in found.clients.values():
                client.get_httpx_client().close()


def _opened(club: Club, table: str) -> int:
    """The position of `table`'s opening."""
    engine = sa.create_engine(club.database_url)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.text("SELECT min(position) FROM events WHERE stream = :s"),
                {"s": f"table:{table}"},
            ).scalar_one()
    finally:
        engine.dispose()
    return int(found)


def the_books(club: Club) -> None:
    """The club's books, as the auditor reads them: JSON and CSV."""
    exceptions = club("audrey", "clubreports.get_reports_exceptions")
    assert any(row.kind == "bet voided" for row in exceptions.rows)
    for name in ("authentication", "significant"):
        page = club("audrey", f"clubreports.get_reports_{name}")
        assert any(row.what == "token created" for row in page.rows), name
    for name in ("exceptions", "authentication", "significant"):
        text = club("audrey", f"clubreports.get_reports_{name}_csv")
        assert text.splitlines()[0].startswith("position,recorded_at"), name


def the_evening_statements_and_limits(club: Club) -> None:
    """An evening opened and cashed up with its night report, ann's statement for the
    month, and her limits and a break, set by the setter at her request: the break last,
    since it refuses her play from then on."""
    m = club.package.models
    opened = club("setter", "evenings.post_evenings",
                  body=m.OpenEvening.from_dict({"floats": {"t1": 5000}, "cage": 1000}))  # fmt: skip
    counts = m.CashUp.from_dict({"counts": {"t1": 4990}, "cage": 1000})
    club("setter", "evenings.post_evenings_cash_up", body=counts)
    assert [e.evening for e in club("audrey", "evenings.get_evenings").items] == [opened.evening]
    night = club("audrey", "evenings.get_evenings_number", opened.evening)
    assert night.difference == -10
    club("audrey", "evenings.get_evenings_number_pdf", opened.evening)
    month = night.closed_at[:7]
    statement = club("audrey", "reads.get_players_name_period_statement", "ann", month=month)
    assert statement.closing == club("ann", "players.get_players_name_balance", "ann").balance
    club("ann", "reads.get_players_name_period_statement_pdf", "ann", month=month)
    csv_text = club("ann", "reads.get_players_name_period_statement_csv", "ann", month=month)
    assert csv_text
    stake = m.LimitBody.from_dict({"limit": 500})
    club("setter", "limits.put_players_name_limits_kind", "ann", "stake", body=stake)
    club("setter", "limits.delete_players_name_limits_kind", "ann", "stake")
    held = club("ann", "limits.get_players_name_limits", "ann")
    assert held.to_dict()["player"] == "ann"
    rest = m.BreakBody.from_dict({"kind": "time-out", "length": 24})
    club("setter", "limits.post_players_name_breaks", "ann", body=rest)


def every_operation(package: ModuleType) -> set[str]:
    api = Path(package.__file__).parent / "api"
    return {
        f"{group.name}.{module.name}"
        for group in pkgutil.iter_modules([str(api)])
        for module in pkgutil.iter_modules([str(api / group.name)])
    }


def test_every_operation_through_a_generated_client(club: Club) -> None:
    evening(club)
    disputes(club)
    the_guides_example(club)
    reads(club)
    the_log(club)
    more_of_the_table(club)
    the_books(club)
    the_evening_statements_and_limits(club)
    assert club.called == every_operation(club.package)


# -- docs/api.md, "An evening, in curl" and "A dispute, in curl" -----------------------


def evening(club: Club) -> None:
    m = club.package.models
    for name in ("ann", "bob", "cat"):
        club("setter", "players.post_players", body=m.Player(name=name))
        club("setter", "players.post_players_name_deposits", name, body=m.Amount(1000))
    for name in ("ann", "bob"):  # a player's token is made for a player who exists
        club.token("player", name)
    club("setter", "players.post_players_name_deposits", "setter", body=m.Amount(100000))
    club("setter", "players.put_players_name_credit_limit", "ann", body=m.CreditLimit(500))
    limits = m.Limits(min_stake=10, max_stake=5000, max_exposure=50000)
    table = m.OpenTable(id="t1", ruleset="english", limits=limits)
    club("setter", "tables.post_tables", body=table)
    write = "tables.post_tables_table_"
    for name in ("ann", "bob", "cat"):
        club("setter", write + "seats", "t1", body=m.Seat(name))
    for name, die in [("ann", 2), ("bob", 5), ("cat", 4)]:
        club("setter", write + "casts", "t1", body=m.Cast(name, die))
    club("setter", write + "stakes", "t1", body=m.Stake(100))
    club("setter", write + "lays", "t1", body=m.Lay("bob", 60))
    club("setter", write + "covers", "t1", body=m.Cover(bets=["b10"]))
    club("setter", write + "main", "t1", body=m.Main(7))
    club("setter", write + "throws", "t1", body=m.Throw(die1=2, die2=2))
    odds = m.Odds("ann", m.OddsOn("chance"), 50)
    assert club("setter", write + "odds", "t1", body=odds).events[0].payload["bet_id"] == "b14"
    club("setter", write + "throws", "t1", body=m.Throw(die1=1, die2=3))

    state = club("setter", "tables.get_tables_table", "t1")
    assert (state.phase, state.caster, state.round_) == ("awaiting-main", "ann", 2)
    settled = club("setter", "reads.get_settlements", table="t1", round_=1)
    assert {s.bet_id: s.winner for s in settled.items} == {"b9": "ann", "b10": "ann", "b14": "ann"}
    statement = club("setter", "reads.get_players_name_statement", "ann")
    assert sum(line.amount for line in statement.items) == 1260
    balance = club("setter", "players.get_players_name_balance", "ann")
    assert (balance.balance, balance.credit_limit) == (1260, 500)


def disputes(club: Club) -> None:
    m = club.package.models
    write = "tables.post_tables_table_"
    club("cecil", write + "main", "t1", body=m.Main(7))
    club("cecil", write + "throws", "t1", body=m.Throw(die1=2, die2=4))
    next_is_8 = m.Proposition(kind=m.PropositionKind("next-total"), totals=[8])
    offer = m.SideBet(player="cat", proposition=next_is_8, backs=True, stake=20, asks=50, to="bob")
    club("cecil", write + "side_bets", "t1", body=offer)
    club("cecil", write + "side_bets_accept", "t1", body=m.SideBetAct("bob", "b21"))
    club("cecil", write + "throws", "t1", body=m.Throw(die1=4, die2=4))
    club("cecil", write + "throws", "t1", body=m.Throw(die1=3, die2=3))

    open_ = "disputes.post_tables_table_rounds_round_disputes"
    claim = m.OpenDispute("the 4+4 was 4+5", throw=23, dice=[4, 5])
    d26 = club("bob", open_, "t1", 2, body=claim)
    assert d26.dispute_id == "d26" and d26.answer.matches
    assert isinstance(d26.answer.what_if, m.WhatIf) and d26.answer.what_if.correctable
    assert [t.to_dict() for t in d26.answer.what_if.adjustments[0].transfers] == [
        {"amount": 70, "source": "player:cat", "target": "player:bob"}
    ]
    claim = m.OpenDispute("the 1+3 was 1+4", throw=15, dice=[1, 4])
    d27 = club("bob", open_, "t1", 1, body=claim)
    assert d27.answer.what_if.refused_rule == "correction-reaches-beyond-round"

    queue = club("setter", "disputes.get_disputes", status=m.GetDisputesStatus("open"))
    assert [d.dispute_id for d in queue.items] == ["d26", "d27"]
    mine = club("bob", "disputes.get_tables_table_disputes", "t1")
    assert [d.claimant for d in mine.items] == ["bob", "bob"]

    resolve = "disputes.post_tables_table_disputes_dispute_id_resolution"
    upheld = m.ResolveDispute("upheld", "the camera shows 1+3")
    club("setter", resolve, "t1", "d27", body=upheld)
    corrected = m.ResolveDispute("corrected", "the camera shows 4+5", throw=23, dice=[4, 5])
    made = club("setter", resolve, "t1", "d26", body=corrected)
    assert [e.type_ for e in made.events] == ["DisputeResolved", "BetAdjusted"]
    claim = m.OpenDispute("the 2+2 was 3+4", throw=13, dice=[3, 4])
    club("bob", open_, "t1", 1, body=claim)
    refused = club("setter", resolve, "t1", "d31", body=corrected, answers=422)
    assert isinstance(refused, m.Problem)
    voided = m.ResolveDispute("voided", "the camera shows 3+4: the round cannot stand")
    club("setter", resolve, "t1", "d31", body=voided)

    d26 = club("setter", "disputes.get_tables_table_disputes_dispute_id", "t1", "d26")
    assert (d26.status, isinstance(d26.answer, m.Answer)) == ("corrected", True)
    assert club("setter", "disputes.get_disputes", status=m.GetDisputesStatus("open")).items == []
    balances = [
        club("setter", "players.get_players_name_balance", name).balance
        for name in ("ann", "bob", "cat", "setter")
    ]
    assert balances == [1000, 1020, 980, 100000]


def the_guides_example(club: Club) -> None:
    """docs/api.md's own example, "A Python client", run as printed but for the address
    and the setter's token, printing what the page says it prints."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## A Python client", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    token = club.clients["setter"].token
    code = code.replace("http://localhost:8000", club.base_url).replace('"hz_..."', repr(token))
    said = [line.split("# → ", 1)[1] for line in code.splitlines() if "# → " in line]
    out, names = io.StringIO(), dict[str, Any]()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(GUIDE), "exec"), names)
    names["club"].get_httpx_client().close()  # as the example's process would, ending
    assert out.getvalue().splitlines() == said


# -- the rest: reads, the log, and the table's other commands ---------------------------


def reads(club: Club) -> None:
    rounds = club("audrey", "reads.get_tables_table_rounds", "t1")
    assert [r.result for r in rounds.items] == ["chance", "chance"]
    first = club("bob", "reads.get_tables_table_rounds_round", "t1", 1)
    assert first.events[-1].type_ == "BetAdjusted"
    replay = club("cecil", "replays.get_tables_table_replay", "t1", limit=5)
    assert [step.type_ for step in replay.steps][:2] == ["TableOpened", "PlayerSeated"]
    round_ = club("cecil", "replays.get_tables_table_rounds_round_replay", "t1", 2)
    assert isinstance(round_.round_, club.package.models.Round)
    recall = club("setter", "replays.get_tables_table_recall", "t1")
    assert [r.round_ for r in recall.rounds] == [2, 1]  # newest first
    assert club("bob", "replays.get_players_name_recall", "bob").rounds
    dice = club("audrey", "reports.get_reports_dice", table="t1")
    assert dice.throws == 5
    verified = club("audrey", "audit.get_audit_verify")
    assert verified.ok and verified.next_after is None
    head = club("audrey", "audit.get_audit_head")
    events = club("audrey", "audit.get_events", stream="table:t1", limit=1)
    assert events.items[0].type_ == "TableOpened" and head.position > 0
    jsonl = club("audrey", "exports.get_export", table="t1")
    assert json.loads(jsonl.splitlines()[0])["format"].startswith("hazard-export")
    csv = club(
        "bob",
        "exports.get_export",
        player="bob",
        format_=club.package.models.GetExportFormat("csv"),
    )
    assert csv.splitlines()[0].lstrip("\ufeff").startswith("position")
    # 20 events into the evening (the log begins with what `hazard serve` recorded as it
    # started, in the log of significant events, and the tokens made).
    mark = _opened(club, "t1") + 19
    as_of = club("setter", "tables.get_tables_table", "t1", as_of=str(mark))
    assert as_of.as_of.position == mark
    then = club("setter", "players.get_players_name_balance", "ann", as_of=str(mark))
    assert then.as_of.position == mark


def the_log(club: Club) -> None:
    key = club("bob", "log.get_log_key")
    newest = club("bob", "log.get_log_checkpoint")
    assert newest.checkpoint.startswith(key.origin)
    # Every write's seal, at the size of the checkpoint it signed: the second write's.
    seals = club("audrey", "audit.get_events", stream="log", limit=2).items
    assert [seal.type_ for seal in seals] == ["LogSealed", "LogSealed"]
    size = seals[1].position
    assert club("bob", "log.get_log_checkpoints_size", size).size == size
    grown = club("bob", "log.get_log_proofs_consistency", from_=size, to=newest.size)
    assert (grown.old.size, grown.new.size) == (size, newest.size)
    position = size - 1  # the second write's last event
    mine = club("audrey", "log.get_log_proofs_inclusion", position=position, size=newest.size)
    assert mine.event.position == position and mine.checkpoint.size == newest.size
    # What anyone may read, with no token: the hashes, and no event.
    hashes = club("anyone", "log.get_log_proofs_inclusion", position=position, size=newest.size)
    assert hashes.leaf_hash == mine.leaf_hash and "event" not in hashes.to_dict()
    assert club("anyone", "log.get_log_key").key == key.key
    none = club("anyone", "log.get_log_cosigned", answers=404)
    assert isinstance(none, club.package.models.Problem)
    assert club("anyone", "log.get_log_cosigned", size=size).witnesses == []
    proof = club("audrey", "log.get_log_proofs_tlog_proof", position=position)
    assert proof.startswith("c2sp.org/tlog-proof@v1\n") and f"\nindex {position - 1}\n" in proof
    gossip = club.package.models.Gossip(note=newest.checkpoint, reported_by="bob's phone")
    assert club("anyone", "log.post_log_gossip", body=gossip).new
    assert club("anyone", "log.get_log_gossip").items[0].note == newest.checkpoint


def more_of_the_table(club: Club) -> None:
    """Every table command the evening did not need: a void throw, a refusal, a side
    bet withdrawn, a departure (and a withdrawal), a closing, a pass, and server dice."""
    m = club.package.models
    write = "tables.post_tables_table_"
    club("setter", write + "main", "t1", body=m.Main(6))
    cocked = m.VoidThrow(m.VoidThrowReason("cocked"), off=1, standing=5)
    club("setter", write + "void_throws", "t1", body=cocked)
    assert club("setter", "tables.get_tables_table", "t1").standing.value == 5
    club("setter", write + "lays", "t1", body=m.Lay("cat", 30))
    laid = club("setter", "tables.get_tables_table", "t1").open_bets[-1].id
    club("setter", write + "refusals", "t1", body=m.Refuse(laid))
    everyone = club("setter", write + "lays_everyone", "t1", body=m.Stake(20))
    for placed in everyone.events:  # bob's and cat's, each refused by the caster
        if placed.type_ == "StakeLaid":
            club("setter", write + "refusals", "t1", body=m.Refuse(placed.payload["bet_id"]))
    next_is_8 = m.Proposition(kind=m.PropositionKind("next-total"), totals=[8])
    offer = m.SideBet(player="cat", proposition=next_is_8, backs=True, stake=20, asks=50)
    offered = club("setter", write + "side_bets", "t1", body=offer)
    bet = offered.events[0].payload["bet_id"]
    club("setter", write + "side_bets_withdraw", "t1", body=m.SideBetAct("cat", bet))
    club("setter", write + "leave", "t1", body=m.Seat("cat"))
    cash_out = m.Amount(amount=980)
    club("setter", "players.post_players_name_withdrawals", "cat", body=cash_out)
    assert club("setter", "players.get_players_name_balance", "cat").balance == 0
    club("setter", write + "close", "t1")

    club("setter", "tables.post_tables", body=m.OpenTable(id="t2", ruleset="club"))
    for name in ("ann", "bob"):
        club("setter", write + "seats", "t2", body=m.Seat(name))
    for name, die in [("ann", 1), ("bob", 3)]:
        club("setter", write + "casts", "t2", body=m.Cast(name, die))
    club("cecil", write + "throws", "t2", body=m.Throw(die1=3, die2=4))  # main 7
    club("cecil", write + "throws", "t2", body=m.Throw(die1=5, die2=6))  # a nick
    club("ann", write + "pass", "t2")

    served = m.OpenTable(id="t9", ruleset="club", dice=m.OpenTableDice("server"))
    club("setter", "tables.post_tables", body=served)
    for name in ("ann", "bob"):
        club("setter", write + "seats", "t9", body=m.Seat(name))
    for name, die in [("ann", 1), ("bob", 3)]:
        club("setter", write + "casts", "t9", body=m.Cast(name, die))
    club("ann", write + "stakes", "t9", body=m.Stake(100))
    thrown = club("ann", write + "throws", "t9", body=m.Throw(client_seed="x1"))
    assert thrown.events[0].type_ == "DiceDrawn"
