"""simhash.near without max_results: the matches and their keys in one statement again

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23

Revision 0004 made ``near`` find the ids of its matches in one statement and read their keys
in a second (``found``, then a join of ``unnest(found)`` back to the table), so that
``max_results`` can stop early. Without ``max_results`` that second statement, and the
radius bookkeeping before it, only cost time: at 1M fingerprints ``near(fp, 3)`` took 1.16
to 1.20 times revision 0001's p50 (0.365 against 0.314 ms), and issue 10 asks that no
search gets slower. This revision changes the function's body only:

* **k = 3 without max_results** (the tightest radius people use, where the fixed cost of a
  call is all there is) goes first: revision 0001's statement, an index-only scan of each
  block index for the query's own block value, joined to the table for the keys, with no
  other statement before it. Measured at 1M against revision 0001's function, query by
  query in turns: 1.00x (0004: 1.19x).
* **Any other k without max_results**: 0004's thresholds and scan/probe switch, then one
  statement that joins the matches to the table for their keys (0001's shape), instead of
  two.
* **With max_results**: unchanged (0004's stages).

The statements keep 0001's shape (``SELECT c.id FROM simhash.documents c`` in each branch,
``FROM hits JOIN simhash.documents d ON d.id = hits.id``) so that a Citus coordinator adapts
them as it adapted 0001's (``simhash_store/distributed.py``). Signature, result, settings and
grants are 0004's (``CREATE OR REPLACE`` keeps the grants); ``near_many`` is unchanged.
The text is 0004's with two blocks added, derived from the frozen 0004 so that it never changes.
"""

from pathlib import Path
from typing import Sequence, Union

from alembic import op

revision: str = "0006"
down_revision: Union[str, Sequence[str], None] = "0005"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

# 0001's statement for k = 3: every block probed at its own value (the plain pigeonhole).
K3_FIRST = """    IF wanted IS NULL AND k = 3 AND method <> 'scan' THEN
        RETURN QUERY
            WITH hits AS (
                SELECT c.id FROM simhash.documents c
                WHERE c.block0 = ((query >> 48) & 65535)::integer AND bit_count((c.fingerprint # query)::bit(64)) <= k
                UNION
                SELECT c.id FROM simhash.documents c
                WHERE c.block1 = ((query >> 32) & 65535)::integer AND bit_count((c.fingerprint # query)::bit(64)) <= k
                UNION
                SELECT c.id FROM simhash.documents c
                WHERE c.block2 = ((query >> 16) & 65535)::integer AND bit_count((c.fingerprint # query)::bit(64)) <= k
                UNION
                SELECT c.id FROM simhash.documents c
                WHERE c.block3 = (query & 65535)::integer AND bit_count((c.fingerprint # query)::bit(64)) <= k
            )
            SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
            FROM hits JOIN simhash.documents d ON d.id = hits.id
            ORDER BY 4, 1;
        RETURN;
    END IF;
"""

# Without max_results there is one stage (stage = k): its matches with their keys, in one statement.
ONE_STAGE = """        IF wanted IS NULL THEN
            RETURN QUERY
                WITH hits AS (
                    SELECT c.id FROM simhash.documents c
                    WHERE c.block0 = ANY (probes0) AND bit_count((c.fingerprint # query)::bit(64)) <= k
                    UNION
                    SELECT c.id FROM simhash.documents c
                    WHERE c.block1 = ANY (probes1) AND bit_count((c.fingerprint # query)::bit(64)) <= k
                    UNION
                    SELECT c.id FROM simhash.documents c
                    WHERE c.block2 = ANY (probes2) AND bit_count((c.fingerprint # query)::bit(64)) <= k
                    UNION
                    SELECT c.id FROM simhash.documents c
                    WHERE c.block3 = ANY (probes3) AND bit_count((c.fingerprint # query)::bit(64)) <= k
                )
                SELECT d.id, d.key, d.fingerprint, bit_count((d.fingerprint # query)::bit(64))::integer
                FROM hits JOIN simhash.documents d ON d.id = hits.id
                ORDER BY 4, 1;
            RETURN;
        END IF;
"""

STAGES = "    -- Without max_results, one stage at max_distance;"
STAGED_STATEMENT = "        -- Each branch is an index-only scan (the block indexes INCLUDE fingerprint and id);"


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


def _replaceable(function: str) -> str:
    """A CREATE FUNCTION statement as CREATE OR REPLACE, without its COMMENT (kept by the replace)."""
    statement = _replace_once(function, "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
    return statement[: statement.index("COMMENT ON FUNCTION")]


def near() -> str:
    """This revision's simhash.near: 0004's with the two one-statement paths added."""
    v2 = _revision("0004_near_v2.py")
    template = _replace_once(v2.NEAR, STAGES, K3_FIRST + STAGES)
    template = _replace_once(template, STAGED_STATEMENT, ONE_STAGE + STAGED_STATEMENT)
    return _replaceable(v2.function_text(template))


def upgrade() -> None:
    op.execute(near())


def downgrade() -> None:
    v2 = _revision("0004_near_v2.py")
    op.execute(_replaceable(v2.function_text(v2.NEAR)))
