"""Test-wide settings.

Hypothesis explores new examples on every local run, which is how it finds bugs; on
CI (CI=true) it is derandomised, so a landing is judged on the same examples every
time and a failure there is reproducible from the log.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
