"""One of each event of the log of significant events (ledger.store.significant_events),
for the tests that hold every event type (the codec's round trip)."""

from __future__ import annotations

from ledger.store import significant_events as sig

AT = "2026-11-27T09:00:00.000000Z"


def every_significant_event() -> list[sig.SignificantEvent]:
    return [
        sig.TokensFound(1, "0123456789abcdef fedcba9876543210", "fedcba9876543210"),
        sig.TokenCreated(2, "3f9c0a1b7d2e4c55", "croupier", "cecil"),
        sig.TokenRevoked(3, "3f9c0a1b7d2e4c55", "croupier", "cecil"),
        sig.SignIns(4, "refused", None, None, None, 1000, AT, AT),
        sig.SignIns(5, "signed in", "3f9c0a1b7d2e4c55", "croupier", "cecil", 1, AT, AT),
        sig.SettingChanged(6, "HAZARD_TIMEZONE", None, "Europe/London"),
        sig.WritesRefused(7, 12, AT, AT),
    ]
