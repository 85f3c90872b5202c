"""The same store spread over a Citus cluster: ``simhash-store init --distributed`` on the coordinator.

A step after ``upgrade head``, safe to rerun, with no revision of its own: the schema is the
single-node one, and this step changes only how it is laid out.

- ``simhash.documents`` is distributed by ``key``. Citus accepts a unique constraint only if it
  includes the distribution column, and ``key`` is the store's natural identity: the
  ``ON CONFLICT (key)`` upsert, ``remove`` and ``get`` all find a document by key, so they stay
  single-shard statements. The primary key becomes ``(id, key)``: ``id`` alone cannot be a
  distributed unique constraint, but every row still gets its ``id`` from the one identity
  sequence on the coordinator (all writes go through it), and ``id`` stays the leading
  column of an index for lookups by id.
- ``block_masks``, ``store_info`` and ``cluster_heads`` (revision 0005) become reference
  tables (a copy on every node), also when a later revision creates one on a distributed store.
- A store that keeps persistent clusters (revision 0005) is distributed as it is: the library
  reads membership in steps that Citus can run (see :mod:`simhash_store.clusters`), and the
  cluster lock, like the one of ``--skip-near-duplicates`` below, is the coordinator's.
- Every function of the ``simhash`` schema is adapted, whatever revision made it: the coordinator
  plans each of its statements afresh (Citus cannot build a multi-shard plan for a generic plan
  with parameters, so ``force_generic_plan`` fails there); the scan/probe switch reads the size
  of one shard (the coordinator's own table is an empty shell); and ``near``'s candidates carry
  key and fingerprint instead of being joined back to the table by ``id``, a join Citus cannot
  run shard by shard. With the distribution column in every branch, the whole ``UNION`` runs
  inside each shard, in one round trip. The workers plan that statement with their own
  settings, so ``near_many`` chooses its shape per batch: one they can only run as index
  probes (few probes), or one they hash (many).
  A function version with a file in ``migrations/sql`` (revision 0008 on) has its Citus form
  written out beside it (``near.v3.citus.sql``): a function installed with the one-server body
  of such a file is replaced by its Citus file, nothing is derived. Only the versions of
  revisions 0001 to 0005, which have no files, are still rewritten by :data:`REWRITES`. A
  function of neither kind that reads the table in a way Citus cannot run stops the step with
  a clear error instead of being left to fail or crawl at query time. Migrations re-run the
  adaptation after every upgrade of a distributed store (``migrations/env.py``).

Writers keep their guarantee: ``--skip-near-duplicates`` serialises writers on an advisory
lock held on the coordinator, the one node every writer talks to, and Citus commits a
transaction on the workers before the coordinator's transaction releases its locks, so the
next writer's check sees every row the previous one stored.

>>> from simhash_store.store import Store
>>> Store("postgresql://coordinator/news").init(distributed=True)  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from psycopg import Cursor, sql

from .errors import DatabaseError
from .migrations import sqlfiles

DISTRIBUTION_COLUMN = "key"
DISTRIBUTED_TABLES = ("documents",)
# cluster_heads (revision 0005): one row a cluster, read by representative id from any shard.
REFERENCE_TABLES = ("store_info", "block_masks", "cluster_heads")
# Functions planned afresh on every call: a generic plan cannot be distributed by Citus.
PLAN_CACHE_MODE = "force_custom_plan"

# The average bytes in one shard of simhash.documents, what near's scan/probe switch must weigh (a
# probe costs the same fixed index descents in every shard, a scan reads one shard's rows).
SHARD_BYTES_VERSION = "documents_shard_bytes.v1"


class NotDistributableError(DatabaseError):
    """The server cannot hold a distributed store (no Citus), or a function cannot be adapted."""


@dataclass(frozen=True)
class Rewrite:
    """A textual change to a function body that Citus needs; ``requires`` names rewrites that must apply with it.

    ``replacement`` is a ``re.sub`` template, or a function of the match (it may return the
    match unchanged: the rewrite then counts as not applied).
    """

    name: str
    pattern: str
    replacement: str | Callable[[re.Match], str]
    requires: tuple[str, ...] = ()
    flags: int = 0


_NEAR_V2 = (
    "near v2: candidates carry the distribution column",
    "near v2: found holds matches",
    "near v2: the nearest are kept whole",
    "near v2: no join back by id",
)
_NEAR_MANY = (
    "near_many: branches carry the distribution column",
    "near_many: ranked rows carry key and fingerprint",
    "near_many: no join back by id",
)
# Apart from the three above: a function adapted before these existed has those and needs these.
_NEAR_MANY_SHAPES = ("near_many: masks declared", "near_many: index probes or one read of each shard")

# near_many's probe statement joins each query to block_masks, then to the block indexes of
# documents: a nested loop of index probes on one server, where the function's settings rule
# out anything else. On Citus the statement runs inside each shard, planned by the worker with
# its own defaults: the function's SET clauses apply on the coordinator only, and Citus sends
# on a SET LOCAL statement only inside an explicit transaction block (not in autocommit).
# The workers then hash-join the batch to their shards, reading each shard once per block:
# right for a batch of many probes, five times too slow for a batch of 1,000 at k = 3 at 1M
# (EXPLAIN ANALYZE on the cluster: Hash Join over Seq Scan of the shard, 4 times a shard).
# So the adapted function picks the statement's shape from the probes of the batch: for few,
# a join on `= ANY (array)`, which no hash or merge join can run, so the worker's only sane
# plan is a probe of the block index for each query; for many, the equality join, which the
# worker hashes. The masks are read once, on the coordinator (block_masks is a reference
# table), and go to the workers as constants.
_ONE_SERVER_BLOCK_JOIN = (
    r"FROM q JOIN simhash\.block_masks m ON m\.weight <= radii\[(?P<radius>[1-4])\]\s+"
    r"JOIN simhash\.documents c ON c\.block(?P<block>[0-3]) = q\.b(?P=block) # m\.mask"
)
_INDEX_PROBES = (
    r"FROM q JOIN simhash.documents c"
    r" ON c.block\g<block> = ANY (ARRAY(SELECT q.b\g<block> # m FROM unnest(masks\g<block>) AS m))"
)
_HASHABLE = (
    r"FROM q CROSS JOIN unnest(masks\g<block>) AS m(mask)"
    r" JOIN simhash.documents c ON c.block\g<block> = q.b\g<block> # m.mask"
)
# A batch with fewer probes than this costs little whatever its plan: no shard sizes are asked.
FEW_PROBES = 1024
# Index probes win while probes x (2 + c) < BREAK_EVEN x c, c = rows of a shard / 65,536 (the
# candidates one probe finds): a probe costs a B-tree descent and a heap visit a candidate,
# hashing costs one read of the shard for each of the 4 blocks and little a probe. Measured at
# 1M (c = 1.9, batches of 10 to 1,000 at k = 3, 7, 11): index probes 5x faster at 4,000 probes
# a batch and 1.5x at 54,800, hashing 1.4x faster at 68,000 and 3x at 548,000.
BREAK_EVEN = 120_000
_CHOOSE_SHAPE = """
    -- Citus: the masks are read here, once (see distributed.py), and the shape of the
    -- statement decides whether the workers probe their block indexes or hash their shards.
    SELECT coalesce(array_agg(m.mask) FILTER (WHERE m.weight <= radii[1]), '{}'),
           coalesce(array_agg(m.mask) FILTER (WHERE m.weight <= radii[2]), '{}'),
           coalesce(array_agg(m.mask) FILTER (WHERE m.weight <= radii[3]), '{}'),
           coalesce(array_agg(m.mask) FILTER (WHERE m.weight <= radii[4]), '{}')
    INTO masks0, masks1, masks2, masks3
    FROM simhash.block_masks m WHERE m.weight <= greatest(radii[1], radii[2], radii[3], radii[4]);
    batch_probes := cardinality(fingerprints)::double precision * probes;
    IF batch_probes > %(few)d THEN
        estimated_rows := simhash.documents_shard_bytes() / 100.0;
        IF batch_probes * (2 + estimated_rows / 65536) >= %(break_even)d * estimated_rows / 65536 THEN
            RETURN QUERY%(space)s%(hashable)s
            RETURN;
        END IF;
    END IF;
    RETURN QUERY%(space)s%(index)s"""


def _near_many_shapes(match: re.Match) -> str:
    """near_many's probe statement as the two statements the adapted function chooses from (see above)."""
    statement = match["statement"]
    joins = [(int(m["block"]), int(m["radius"])) for m in re.finditer(_ONE_SERVER_BLOCK_JOIN, statement)]
    if not joins:
        return match[0]  # adapted already
    if joins != [(block, block + 1) for block in range(4)]:  # radii[1] is block 0's radius
        raise NotDistributableError(
            f"cannot adapt near_many to Citus: its probe statement joins block_masks {len(joins)} times, "
            "not once for each of the 4 blocks in order"
        )
    index = re.sub(_ONE_SERVER_BLOCK_JOIN, _INDEX_PROBES, statement)
    hashable = re.sub(_ONE_SERVER_BLOCK_JOIN, _HASHABLE, statement)
    return _CHOOSE_SHAPE % {
        "few": FEW_PROBES,
        "break_even": BREAK_EVEN,
        "space": match["space"],
        "hashable": hashable,
        "index": index,
    }


REWRITES = (
    # The shell table on the coordinator is empty: measure the shards instead.
    Rewrite(
        "relation size",
        r"pg_relation_size\(\s*'simhash\.documents'::regclass\s*\)",
        "simhash.documents_shard_bytes()",
    ),
    # Revision 0004's form of the same estimate (the planner's rows from pg_class); on the
    # coordinator pg_class describes the shell: about 100 bytes a row of one shard instead.
    Rewrite(
        "planner's row estimate",
        r"SELECT CASE WHEN c\.reltuples\b.*?INTO estimated_rows FROM pg_class c WHERE c\.oid = 'simhash\.documents'::regclass;",
        "estimated_rows := simhash.documents_shard_bytes() / 100.0;",
        flags=re.S,
    ),
    # Candidates found by the block indexes carry key and fingerprint...
    Rewrite(
        "candidates carry the distribution column",
        r"SELECT c\.id FROM simhash\.documents c\b",
        "SELECT c.id, c.key, c.fingerprint FROM simhash.documents c",
        requires=("no join back by id",),
    ),
    # ...so they are the answer: no join back to the table by id, across shards.
    Rewrite(
        "no join back by id",
        r"FROM hits JOIN simhash\.documents d ON d\.id = hits\.id",
        "FROM hits d",
        requires=("candidates carry the distribution column",),
    ),
    # Revision 0004's near, the same change in its staged form: the branches carry key and
    # fingerprint, a stage's matches are kept whole (not ids) and returned from there. The
    # stage keeps all its matches and max_results applies on return: a LIMIT inside the
    # statement would make Citus run the UNION as a subplan through an intermediate result
    # (about 2 ms more a call here), without it the statement is one pushed-down fan-out.
    *(
        Rewrite(name, pattern, replacement, requires=tuple(n for n in _NEAR_V2 if n != name), flags=re.S)
        for name, pattern, replacement in (
            (
                "near v2: candidates carry the distribution column",
                r"SELECT c\.id, c\.fingerprint FROM simhash\.documents c\b",
                "SELECT c.id, c.key, c.fingerprint FROM simhash.documents c",
            ),
            ("near v2: found holds matches", r"\bfound bigint\[\];", "found simhash.match[];"),
            (
                "near v2: the nearest are kept whole",
                r"SELECT array_agg\(h\.id ORDER BY h\.distance, h\.id\) INTO found(\s+)FROM \((\s+)"
                r"SELECT u\.id, bit_count\(\(u\.fingerprint # query\)::bit\(64\)\) AS distance"
                r"(\s+FROM \(.*?\) u)\s+ORDER BY 2, 1\s+LIMIT wanted\b",
                r"SELECT array_agg((h.id, h.key, h.fingerprint, h.distance)::simhash.match ORDER BY h.distance, h.id)"
                r" INTO found\1FROM (\2SELECT u.id, u.key, u.fingerprint, "
                r"bit_count((u.fingerprint # query)::bit(64))::integer AS distance\3",
            ),
            (
                "near v2: no join back by id",
                r"SELECT d\.id, d\.key, d\.fingerprint, bit_count\(\(d\.fingerprint # query\)::bit\(64\)\)::integer"
                r"(\s+)FROM unnest\(found\) WITH ORDINALITY AS f\(id, position\)\s+"
                r"JOIN simhash\.documents d ON d\.id = f\.id(\s+)ORDER BY f\.position;",
                r"SELECT f.id, f.key, f.fingerprint, f.distance"
                r"\1FROM unnest(found) WITH ORDINALITY AS f(id, key, fingerprint, distance, position)\2ORDER BY f.position"
                r"\2LIMIT wanted;",
            ),
        )
    ),
    # Revision 0004's near_many: every branch carries key and fingerprint, the ranked rows
    # are the answer (no join back by id).
    *(
        Rewrite(name, pattern, replacement, requires=tuple(n for n in _NEAR_MANY if n != name), flags=re.S)
        for name, pattern, replacement in (
            (
                "near_many: branches carry the distribution column",
                r"SELECT q\.i, c\.id, bit_count",
                "SELECT q.i, c.id, c.key, c.fingerprint, bit_count",
            ),
            (
                "near_many: ranked rows carry key and fingerprint",
                r"SELECT h\.i, h\.id, h\.distance, row_number\(\)",
                "SELECT h.i, h.id, h.key, h.fingerprint, h.distance, row_number()",
            ),
            (
                "near_many: no join back by id",
                r"SELECT r\.i, d\.id, d\.key, d\.fingerprint, r\.distance(\s+)FROM ranked r JOIN simhash\.documents d ON d\.id = r\.id",
                r"SELECT r.i, r.id, r.key, r.fingerprint, r.distance\1FROM ranked r",
            ),
        )
    ),
    *(
        Rewrite(name, pattern, replacement, requires=tuple(n for n in _NEAR_MANY_SHAPES if n != name), flags=re.S)
        for name, pattern, replacement in (
            (
                "near_many: masks declared",
                r"(\n(\s*)estimated_rows double precision;\n)(BEGIN\s+IF fingerprints IS NULL\b)",
                r"\1\2masks0 integer[];\n\2masks1 integer[];\n\2masks2 integer[];\n\2masks3 integer[];\n"
                r"\2batch_probes double precision;\n\3",
            ),
            (
                "near_many: index probes or one read of each shard",
                r"(?:\n[ \t]*--[^\n]*)*\n[ \t]*RETURN QUERY(?P<space>\s+)"
                r"(?P<statement>WITH q AS MATERIALIZED \(.*?ORDER BY r\.i, r\.distance, r\.id;)",
                _near_many_shapes,
            ),
        )
    ),
)


# What must not be left in a function that reads simhash.documents on a coordinator: it would
# run, and silently take every decision from an empty table. (A statement Citus cannot run
# at all fails loudly on its own, and the distributed tests call every function.)
_UNADAPTED = (
    (r"pg_relation_size\(\s*'simhash\.documents'", "reads the size of the coordinator's empty shell table"),
    (r"\breltuples\b|\brelpages\b|pg_class", "reads planner statistics of the coordinator's empty shell table"),
)


def citus_version(cursor: Cursor) -> str | None:
    row = cursor.execute("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'citus'").fetchone()
    return row[0] if row else None


def require_citus(cursor: Cursor, where: str) -> str:
    version = citus_version(cursor)
    if version is None:
        raise NotDistributableError(
            f"{where} has no Citus extension: a distributed store needs a Citus coordinator "
            "(shared_preload_libraries = 'citus', then CREATE EXTENSION citus); leave out --distributed for one server"
        )
    return version


def is_distributed(cursor: Cursor) -> bool:
    """Whether simhash.documents is a Citus distributed table here."""
    if citus_version(cursor) is None:
        return False
    return cursor.execute(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = pg_catalog.to_regclass('simhash.documents'))"
    ).fetchone()[0]


def workers_without_role(cursor: Cursor, role: str) -> list[str]:
    """The workers ("host:port") where ``role`` does not exist, for a distributed store; [] on one server.

    Roles are per server: a role created in a database without Citus (``postgres``, say)
    exists on the coordinator only, and a GRANT on a distributed table fails on the workers.
    """
    if not is_distributed(cursor):
        return []
    rows = cursor.execute(
        "SELECT nodename, nodeport, success, result FROM pg_catalog.run_command_on_workers("
        "pg_catalog.format('SELECT pg_catalog.count(*) FROM pg_catalog.pg_roles WHERE rolname = %%L', %s::pg_catalog.text)) ORDER BY 1, 2",
        (role,),
    ).fetchall()
    for host, port, success, result in rows:
        if not success:
            raise DatabaseError(f"could not check the roles of worker {host}:{port}: {result}")
    return [f"{host}:{port}" for host, port, _, result in rows if result == "0"]


def size_functions(connection) -> tuple[str, str]:
    """Names of the functions giving the total and heap size of simhash.documents (on Citus: of its shards)."""
    with connection.cursor() as cursor:
        if is_distributed(cursor):
            return "pg_catalog.citus_total_relation_size", "pg_catalog.citus_relation_size"
    return "pg_catalog.pg_total_relation_size", "pg_catalog.pg_relation_size"


def distribute(cursor: Cursor) -> None:
    """Lay out a migrated store's tables over the cluster (idempotent), in the caller's transaction.

    Then :func:`adapt_functions`, in another transaction: Citus changes a function on every
    node over one connection each, which it cannot do after the parallel copy of the tables.
    """
    cursor.execute("SET LOCAL search_path = pg_catalog, pg_temp")
    cursor.execute("SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('simhash-store migrations'))")
    if _keeps_segments(cursor):
        raise NotDistributableError(
            "this store keeps segments for containment search (init --segments), which a distributed "
            "store cannot keep yet; distribute a store without them"
        )
    layout = _layout(cursor)
    if layout != "four16":
        raise NotDistributableError(
            f"this store has the {layout} layout (init --layout), which is for one server: "
            "run `simhash-store init --layout four16` first, then distribute it"
        )
    # The segments table (empty: segments are off) stays a local table, which may not reference a
    # distributed one: its foreign key goes.
    cursor.execute("ALTER TABLE IF EXISTS simhash.segments DROP CONSTRAINT IF EXISTS fk_segments_document_id_documents")
    _reference_tables(cursor)
    if _partition_method(cursor, "documents") is None:
        _key_in_every_unique_constraint(cursor)
        cursor.execute("SELECT pg_catalog.create_distributed_table('simhash.documents', %s)", (DISTRIBUTION_COLUMN,))
        _drop_local_copy(cursor, "documents")


def _reference_tables(cursor: Cursor) -> None:
    """Every small table of the store that exists here (a revision may add one) becomes a reference table."""
    for table in REFERENCE_TABLES:
        exists = cursor.execute("SELECT pg_catalog.to_regclass(%s) IS NOT NULL", (f"simhash.{table}",)).fetchone()[0]
        if exists and _partition_method(cursor, table) is None:
            cursor.execute("SELECT pg_catalog.create_reference_table(%s)", (f"simhash.{table}",))
            _drop_local_copy(cursor, table)


def _keeps_segments(cursor: Cursor) -> bool:
    """Whether writes keep segments (revision 0009, ``init --segments``)."""
    has_column = cursor.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = pg_catalog.to_regclass('simhash.store_info') "
        "AND attname = 'segments' AND NOT attisdropped)"
    ).fetchone()[0]
    return bool(
        has_column and cursor.execute("SELECT EXISTS (SELECT 1 FROM simhash.store_info WHERE segments)").fetchone()[0]
    )


def _layout(cursor: Cursor) -> str:
    """The store's block layout (revisions 0011 and 0012; four16 before them)."""
    has_column = cursor.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = pg_catalog.to_regclass('simhash.store_info') "
        "AND attname = 'layout' AND NOT attisdropped)"
    ).fetchone()[0]
    row = cursor.execute("SELECT layout FROM simhash.store_info").fetchone() if has_column else None
    return row[0] if row else "four16"


def _drop_local_copy(cursor: Cursor, table: str) -> None:
    """Citus copies an existing table's rows to the shards and leaves the originals in the coordinator's shell."""
    cursor.execute("SELECT pg_catalog.truncate_local_data_after_distributing_table(%s)", (f"simhash.{table}",))


def _partition_method(cursor: Cursor, table: str) -> str | None:
    row = cursor.execute(
        "SELECT partmethod FROM pg_catalog.pg_dist_partition WHERE logicalrelid = %s::pg_catalog.regclass",
        (f"simhash.{table}",),
    ).fetchone()
    return row[0] if row else None


def _key_in_every_unique_constraint(cursor: Cursor) -> None:
    """Unique constraints without the key (the id primary key) are rebuilt with it, under the same name."""
    rows = cursor.execute(
        """
        SELECT c.conname, c.contype, pg_catalog.array_agg(a.attname ORDER BY k.ordinality)
        FROM pg_catalog.pg_constraint c
        CROSS JOIN LATERAL pg_catalog.unnest(c.conkey) WITH ORDINALITY AS k(attnum, ordinality)
        JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
        WHERE c.conrelid = 'simhash.documents'::pg_catalog.regclass AND c.contype IN ('p', 'u')
        GROUP BY c.conname, c.contype
        """
    ).fetchall()
    for name, kind, columns in rows:
        if DISTRIBUTION_COLUMN in columns:
            continue
        statement = sql.SQL(
            "ALTER TABLE simhash.documents DROP CONSTRAINT {name}, ADD CONSTRAINT {name} {kind} ({columns})"
        )
        cursor.execute(
            statement.format(
                name=sql.Identifier(name),
                kind=sql.SQL("PRIMARY KEY" if kind == "p" else "UNIQUE"),
                columns=sql.SQL(", ").join(map(sql.Identifier, [*columns, DISTRIBUTION_COLUMN])),
            )
        )


def adapt(definition: str, name: str) -> str:
    """A function definition (``pg_get_functiondef``) as a Citus coordinator needs it; raises if it cannot be."""
    adapted = definition
    applied: set[str] = set()
    for rewrite in REWRITES:
        rewritten = re.sub(rewrite.pattern, rewrite.replacement, adapted, flags=rewrite.flags)
        if rewritten != adapted:
            applied.add(rewrite.name)
            adapted = rewritten
    for rewrite in REWRITES:
        missing = [r for r in rewrite.requires if rewrite.name in applied and r not in applied]
        if missing:
            raise NotDistributableError(
                f"cannot adapt {name} to Citus: it has the shape for {rewrite.name!r} but not for {missing[0]!r}"
            )
    code = re.sub(r"--[^\n]*", "", adapted)  # comments may name anything
    if "simhash.documents" in code:
        for pattern, why in _UNADAPTED:
            if re.search(pattern, code):
                raise NotDistributableError(f"cannot adapt {name} to Citus: it {why}")
    return adapted


def adapt_functions(cursor: Cursor) -> list[str]:
    """Give every function of the simhash schema its Citus form (idempotent); returns the names changed.

    A version with a Citus file (``migrations/sql``) is replaced by that file, matched by its
    one-server body; a function already in a Citus file's form is left alone; older versions
    are rewritten (:func:`adapt`).
    """
    cursor.execute(sqlfiles.read(SHARD_BYTES_VERSION, citus=True))
    citus_forms = sqlfiles.citus_variants()
    adapted_already = sqlfiles.citus_bodies()
    functions = cursor.execute(
        """
        SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text, pg_catalog.pg_get_functiondef(p.oid), p.prosrc,
               p.prolang = (SELECT oid FROM pg_catalog.pg_language WHERE lanname = 'plpgsql')
        FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'simhash'::pg_catalog.regnamespace AND p.prokind = 'f'
        ORDER BY 1
        """
    ).fetchall()
    changed = []
    for signature, definition, body, plpgsql in functions:
        if body in citus_forms:
            cursor.execute(citus_forms[body])
            changed.append(signature)
            continue
        if body in adapted_already:
            continue
        adapted = adapt(definition, signature)
        if adapted != definition:
            cursor.execute(adapted)
            changed.append(signature)
        if plpgsql and "simhash.documents" in definition:
            cursor.execute(
                sql.SQL("ALTER FUNCTION {} SET plan_cache_mode = {}").format(
                    sql.SQL(signature), sql.SQL(PLAN_CACHE_MODE)
                )
            )
    return changed


def check_server(engine) -> str:
    """The Citus version of the server behind ``engine``, or :class:`NotDistributableError` (nothing is changed)."""
    from .config import redact

    with engine.connect() as connection:
        with connection.connection.driver_connection.cursor() as cursor:
            return require_citus(cursor, f"database {redact(engine.url)}")


def distribute_store(engine) -> None:
    """:func:`distribute` in a transaction of its own on ``engine`` (a migrated store)."""
    for step in (distribute, adapt_functions):
        with engine.begin() as connection:
            with connection.connection.driver_connection.cursor() as cursor:
                step(cursor)


def before_migrations(connection) -> None:
    """On Citus, migrations change tables and functions in one transaction: over one connection per node."""
    with connection.connection.driver_connection.cursor() as cursor:
        if citus_version(cursor) is not None:
            cursor.execute("SET LOCAL citus.multi_shard_modify_mode = 'sequential'")


def after_migrations(connection) -> None:
    """Migrations re-create functions for one server: adapt them again when the store is distributed."""
    with connection.connection.driver_connection.cursor() as cursor:
        if is_distributed(cursor):
            _reference_tables(cursor)  # tables a revision has just created
            adapt_functions(cursor)


__all__ = [
    "NotDistributableError",
    "adapt",
    "adapt_functions",
    "after_migrations",
    "before_migrations",
    "check_server",
    "distribute",
    "distribute_store",
    "is_distributed",
    "size_functions",
    "workers_without_role",
]
