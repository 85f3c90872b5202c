"""simhash.near probes through the block indexes whatever the statistics say

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22

``simhash.near`` decides between probing the block indexes and scanning the table
itself, so its probe statement must never be planned as a scan. Right after a bulk load
(``COPY`` by any application, before ``ANALYZE``) the planner knows nothing of the table:
it guessed 5% of the rows for ``block0 = ANY ($1)``, chose a sequential or bitmap plan, and
``force_generic_plan`` kept that plan: 100 ms instead of 0.4 ms at 1M rows until
autovacuum got round to the table.

The function now carries planner settings that leave only the index path for its
statements (``enable_seqscan``, ``enable_bitmapscan``, ``enable_hashjoin``,
``enable_mergejoin`` off: index-only scans of the block indexes, a nested loop into the
primary key), and turns sequential scans back on, for the rest of the call only, on its
deliberate scan branch. A SET clause on a function applies for the call and is undone
when it returns, so nothing leaks into the caller's session.

The body is revision 0001's with that one line added (0001 is frozen byte for byte, so
the text derived here never changes).
"""

from pathlib import Path
from typing import Sequence, Union

from alembic import op

revision: str = "0003"
down_revision: Union[str, Sequence[str], None] = "0002"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

SETTINGS = """SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off"""

SCAN_BRANCH = "    IF method = 'scan' THEN\n"


def _revision(name: str):
    """An earlier revision's module, for its frozen text."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"simhash_store_revision_{name[:4]}", Path(__file__).with_name(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def near() -> str:
    """Revision 0001's simhash.near with the planner settings and a scan branch that may scan."""
    text = _revision("0001_initial_store.py").NEAR
    text = _replace_once(text, "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
    text = _replace_once(text, "SET plan_cache_mode = force_generic_plan", SETTINGS)
    return _replace_once(
        text, SCAN_BRANCH, SCAN_BRANCH + "        PERFORM set_config('enable_seqscan', 'on', true);  -- until the call returns\n"
    )


def upgrade() -> None:
    op.execute(near())


def downgrade() -> None:
    # Back to 0002: revision 0001's function with its search_path pinned (grants are kept by OR REPLACE).
    op.execute(_replace_once(_revision("0001_initial_store.py").NEAR, "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
    op.execute("ALTER FUNCTION simhash.near(bigint, integer, text) SET search_path = pg_catalog, pg_temp")
