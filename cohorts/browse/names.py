"""Names the browse web view and its Datasette plugin share (kept apart: no import cycle)."""

from __future__ import annotations

import re

DATABASE = "browse"
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
KEY_ID_RE = re.compile(r"^[0-9a-f]{64}$")
#: The table of each governed kind's rows (their ``standing`` column).
GOVERNED_TABLES = {
    "benchmark-cohort": "cohorts",
    "burn-notice": "burn_notices",
    "cohort-binding": "bindings",
}
