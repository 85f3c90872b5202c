"""Pinned name resolution: simhash.near runs under search_path pg_catalog, pg_temp; distance binds its names when created

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22

A role that may create objects in a schema on a caller's search_path (``public`` in many
databases) could otherwise make our functions run its code with the caller's rights: for
example an operator ``public.&(bigint, integer)`` is an exact match for ``query & 65535``
in ``simhash.near`` and beats the built-in ``&(bigint, bigint)``, and with a search_path of
``public, pg_catalog`` even ``#(bigint, bigint)`` can be shadowed.

* ``simhash.near`` gets ``SET search_path = pg_catalog, pg_temp`` (it names the schema of
  every table and type it uses), as PostgreSQL's "Writing SECURITY DEFINER Functions
  Safely" advises.
* ``simhash.distance`` is the one exception to the SET clause: a SET clause stops
  PostgreSQL inlining an SQL function, which made ``WHERE simhash.distance(fingerprint, q)
  <= 20`` over 1M rows 21 times slower (66 ms to 1,400 ms, PostgreSQL 15). It gets an
  SQL-standard body instead (``RETURN ...``, PostgreSQL 14+): the body is parsed when the
  function is created, with every name schema-qualified here, so the caller's search_path
  plays no part when it runs, and it is still inlined.
"""

from pathlib import Path
from typing import Sequence, Union

from alembic import op

revision: str = "0002"
down_revision: Union[str, Sequence[str], None] = "0001"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

PINNED_PATH = "pg_catalog, pg_temp"

DISTANCE = """
CREATE OR REPLACE FUNCTION simhash.distance(a bigint, b bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.bit_count((a OPERATOR(pg_catalog.#) b)::bit(64))::integer;
"""


def _revision_0001():
    """Revision 0001's module, for its frozen function text (the downgrade restores it exactly)."""
    import importlib.util

    path = Path(__file__).with_name("0001_initial_store.py")
    spec = importlib.util.spec_from_file_location("simhash_store_revision_0001", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    op.execute(DISTANCE)
    op.execute(f"ALTER FUNCTION simhash.near(bigint, integer, text) SET search_path = {PINNED_PATH}")


def downgrade() -> None:
    op.execute("ALTER FUNCTION simhash.near(bigint, integer, text) RESET search_path")
    # CREATE OR REPLACE keeps the function's grants; the COMMENT in the text is the same.
    op.execute(_revision_0001().DISTANCE.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
