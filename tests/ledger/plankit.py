"""What the database would do with a query: the statements an engine runs, captured,
and each one's plan, held to no full scan and no sort of the read models' tables (an
index missing, whatever the size of the table)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa


def capture(engine: sa.Engine) -> list[tuple[str, Any]]:
    statements: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        statements.append((statement, params))

    sa.event.listen(engine, "before_cursor_execute", record)
    return statements


def plan(conn: sa.Connection, statement: str, params: Any) -> str:
    """The plan the database would use, with every other way ruled out where it can be:
    PostgreSQL is told to avoid full scans and sorts, so one in the plan is a missing
    index rather than a guess from statistics on a tiny table."""
    if conn.dialect.name == "sqlite":
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params).all()
        return "\n".join(str(row[-1]) for row in rows)
    conn.exec_driver_sql("SET enable_seqscan = off")
    conn.exec_driver_sql("SET enable_sort = off")
    rows = conn.exec_driver_sql(f"EXPLAIN {statement}", params).all()
    return "\n".join(row[0] for row in rows)


def full_scan_or_sort(text: str) -> list[str]:
    bad = ("SCAN settlements", "SCAN settlement_parties", "SCAN rounds", "SCAN events")
    return [
        line
        for line in text.splitlines()
        if any(b in line for b in bad) or "TEMP B-TREE" in line or "Seq Scan" in line
        or line.strip().startswith(("Sort", "->  Sort", "Incremental Sort", "->  Incremental"))
    ]  # fmt: skip
