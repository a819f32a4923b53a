"""The app for a WSGI server in production:

    DATABASE_URL=postgresql+psycopg://... hazard db upgrade
    DATABASE_URL=postgresql+psycopg://... gunicorn -w 4 -b 0.0.0.0:8000 ledger.wsgi:app

Without --preload each gunicorn worker imports this after the fork, so each has its own
database engine. For /metrics to count every worker, set PROMETHEUS_MULTIPROC_DIR to an
empty directory before gunicorn starts (see ledger.api.metrics and docs/operating.md).
"""

from __future__ import annotations

from ledger import jsonlogging
from ledger.api import create_app, servererrors

jsonlogging.configure()
servererrors.install()  # gunicorn's own error pages as problems too
app = create_app()
