"""Who a request comes from: the holder of its bearer token, which create_app's
`_authenticate` found before the view runs, and whether their role may do what they ask.

A module of its own, below the blueprints and create_app alike: the views import it, and
create_app imports the views, so neither reaches back into the other.
"""

from __future__ import annotations

from flask import g
from flask_smorest import abort

from ledger.commands import Role, require_role
from ledger.web.tokens import Holder


def caller() -> Holder:
    """The caller, the holder of the request's token (a 401 without one)."""
    who: Holder | None = g.get("holder")
    if who is None:
        abort(401, message="a bearer token is required")
    assert who is not None
    return who


def require(*roles: Role) -> Holder:
    """The caller, who must hold one of `roles` (the setter may do anything): a 401
    without a token, NotPermitted (a 403) for another role."""
    who = caller()
    require_role(who, *roles)
    return who
