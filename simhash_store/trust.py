"""Whose code a store runs: the ``simhash`` schema is used only when no untrusted role can change it.

The library calls the functions of the schema (``simhash.near``, ``near_many``, ...) and writes
its tables, whose triggers run too, all with the connecting role's rights. Whoever owns the
schema, or may create in it, can replace any of them. So every open (a read, a write, ``init``,
``upgrade``, a migration) first checks, in one catalog query:

- the schema belongs to a role the session trusts: the connecting role, a role it is a member
  of (through ``pg_auth_members``, not a superuser's implied membership of every role; and not
  a membership granted from inside that role, by itself or one of its members, which the
  session never chose: before PostgreSQL 16 any role could grant itself to anyone), a
  superuser, or a role named in ``SIMHASH_STORE_TRUSTED_OWNERS`` (the owner of a store that
  other roles read or write through ``grant-read`` or grants of their own);
- no other role (PUBLIC included) holds CREATE on the schema, except members of its owner,
  nor TRIGGER on one of its tables: a trigger's WHEN condition runs with the rights of the
  role that writes the table, whoever made the trigger (PostgreSQL does not record who); nor
  REFERENCES on one of its tables or columns: PostgreSQL checks each row inserted into a
  referencing table with a query run as the referenced table's owner, which casts the
  referencing column with whatever cast its type has (a cast of the referencing role's own);
- every relation in it (tables, sequences, indexes, views, composite types), every function
  the library calls in it (any overload of those names), every trigger function on its
  tables, every function, operator, type and relation a trigger's WHEN condition, a row security
  policy's expressions or a rule (a view's too) name, every enabled event trigger's function, and
  every table holding a foreign key to one of its tables belongs to the schema's owner, a member
  of it, or a superuser: PostgreSQL checks a delete from the store's table with a query on the
  referencing table, run in your session as that table's owner, whose planning runs the constant
  calls in its index expressions (set_config there changes your next statements' search_path),
  and an ON DELETE or ON UPDATE action writes that table in your session;
- no other role (PUBLIC included) may write the store's own records, which searches and writes
  trust: INSERT, UPDATE, DELETE or TRUNCATE on ``block_masks``, ``wide_masks`` (deleted masks make
  searches silently miss near duplicates) or ``alembic_version``, nor UPDATE, DELETE or TRUNCATE
  on ``store_info`` (a rewritten scheme: the owner's next add fingerprints with another), except
  UPDATE of the columns writers update (:data:`WRITABLE_STORE_INFO`); a grant on a column counts;
- no trigger condition runs SQL given as text through pg_catalog's functions
  (query_to_xml('SELECT f()', ...) names nothing the check could follow), nor calls a volatile
  function (set_config: a search_path it sets for the session makes the writer's next
  statements call another role's operators; lo_export, setval, ...). One that calls a
  superuser's own function running SQL text is not seen (docs/limitations.md).

Before the migrations make tables or the schema, :func:`check_default_privileges` refuses default
privileges that would give another role TRIGGER or REFERENCES on them, or CREATE on the schema.
Row security that applies to the session on one of the store's tables is refused too: its searches
and writes would silently see only the rows the policies let through.

A member of ``pg_write_all_data`` needs no grant: :func:`check_records` counts the masks tables'
rows against what the migrations made, on every open of a store at the newest revision (and
``store_info.stored_scheme`` refuses a scheme record no write makes).

The query also says whether the version table exists, which the revision check asked before:
a read pays no extra round trip. It runs under the session's pinned ``search_path`` and names
``pg_catalog`` anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .config import TRUSTED_OWNERS_VARIABLE, trusted_owners
from .errors import UntrustedSchemaError

# The functions of the schema, which the library, the schema's own functions and view, and other
# applications call (a test compares it with what the migrations create): looked up by name through pg_proc's index,
# where scanning every function of the database for the schema's costs 0.3 ms more per open.
# Any overload of one of these names counts, whatever its arguments.
# documents_shard_bytes exists on a Citus store only (near and near_many call it there).
CITUS_FUNCTIONS = ("documents_shard_bytes",)
LIBRARY_FUNCTIONS = (
    "near",
    "near_many",
    "distance",
    "cluster_of",
    "from_hex",
    "to_hex",
    "contained",
    "containment_pairs",
    *CITUS_FUNCTIONS,
)

# The WHEN condition in pg_get_triggerdef's text, and the pg_catalog functions that run SQL given as
# text or as a name (a query, a cursor, a table or view, a schema, the database; ts_stat and
# ts_rewrite take a query's text; PostgreSQL 16's pg_input_is_valid and pg_input_error_info read a
# value as a type named in text, a domain's CHECK with it): through them a condition reaches
# functions it does not name.
# A condition calling a volatile function is refused too (found in the condition's node tree: the
# functions of its calls and operators): set_config('search_path', 'app, pg_catalog', false) put
# another role's schema first for the session, and its operators (= on bigint, on text) then ran in
# the writer's next statements, which name no schema for an operator; lo_export, setval, ... act
# with the writer's rights.
_TRIGGER_CONDITION = r"WHEN \((.*)\) EXECUTE (?:FUNCTION|PROCEDURE) "
_RUNS_SQL_TEXT = r"(query|cursor|table|schema|database)_to_xml|ts_stat|ts_rewrite|set_config|pg_input_"
_CALLED = r":(?:op)?funcid ([0-9]+)"

# The store's own records, which searches and writes trust and only the owner changes: the masks a
# search probes the block indexes with (deleted, searches silently miss near duplicates), the
# revision (rewritten, the next upgrade runs the wrong migrations) and store_info (its scheme:
# the owner's next add fingerprints with another). Writers legitimately update these columns of
# store_info, and only these: remove (highest_retired_id), recluster (cluster_max_distance,
# keep_policy). Not segments (init --segments sets it, the owner's: set back to false, the owner's
# adds would stop keeping segments and containment searches miss them) nor recommended_max_distance
# (calibrate --apply, the owner's: the k of every search that names none, serve --http's included).
GUARDED_TABLES = ("block_masks", "wide_masks", "alembic_version", "store_info")
WRITABLE_STORE_INFO = ("highest_retired_id", "cluster_max_distance", "keep_policy")

# %(schema)s is the schema's name, %(trusted)s the roles named in TRUSTED_OWNERS_VARIABLE.
# Owners and CREATE grantees are compared with the schema owner's own members (who may act as
# the owner anyway), never with the session's: another member of a group the session belongs
# to is not the owner.
_CHECK = """
WITH RECURSIVE
schema AS (
    SELECT n.oid, n.nspowner, n.nspacl FROM pg_catalog.pg_namespace n
    WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s
),
mine (role) AS (
    SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER
    UNION
    SELECT m.roleid FROM pg_catalog.pg_auth_members m JOIN mine ON m.member OPERATOR(pg_catalog.=) mine.role
    WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles g
                      WHERE g.oid OPERATOR(pg_catalog.=) m.grantor AND NOT g.rolsuper
                        AND pg_catalog.pg_has_role(g.oid, m.roleid, 'MEMBER'))
),
owners (role) AS (
    SELECT s.nspowner FROM schema s
    UNION  -- no schema yet: the session about to make it (what it would run before the check can)
    SELECT mine.role FROM mine WHERE NOT EXISTS (SELECT FROM schema)
    UNION
    SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolsuper
    UNION
    SELECT m.member FROM pg_catalog.pg_auth_members m JOIN owners ON m.roleid OPERATOR(pg_catalog.=) owners.role
),
objects (what, owner) AS (
    SELECT 'relation ' OPERATOR(pg_catalog.||) c.relname, c.relowner
    FROM pg_catalog.pg_class c, schema s WHERE c.relnamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'function ' OPERATOR(pg_catalog.||) p.proname, p.proowner
    FROM pg_catalog.pg_proc p, schema s
    WHERE p.proname OPERATOR(pg_catalog.=) ANY (%(functions)s::pg_catalog.name[])
      AND p.pronamespace OPERATOR(pg_catalog.=) s.oid
    UNION ALL
    SELECT 'trigger ' OPERATOR(pg_catalog.||) g.tgname OPERATOR(pg_catalog.||) ' on ' OPERATOR(pg_catalog.||) c.relname,
           p.proowner
    FROM pg_catalog.pg_trigger g
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) g.tgrelid
    JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) g.tgfoid
    JOIN schema s ON c.relnamespace OPERATOR(pg_catalog.=) s.oid
    WHERE NOT g.tgisinternal
    UNION ALL
    -- What a trigger's WHEN condition calls (recorded as the trigger's dependencies, its function too),
    -- and what a row security policy's expressions or a rule's (a view's) call: they run in the session
    -- of whoever reads or writes the table, with its rights (a policy under FORCE ROW LEVEL SECURITY, the owner's).
    SELECT e.what OPERATOR(pg_catalog.||) pg_catalog.pg_describe_object(d.refclassid, d.refobjid, 0), u.owner
    FROM (
        SELECT 'the condition of trigger ' OPERATOR(pg_catalog.||) g.tgname OPERATOR(pg_catalog.||) ' on '
               OPERATOR(pg_catalog.||) c.relname OPERATOR(pg_catalog.||) ': ',
               'pg_catalog.pg_trigger'::pg_catalog.regclass, g.oid
        FROM pg_catalog.pg_trigger g
        JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) g.tgrelid
        JOIN schema s ON c.relnamespace OPERATOR(pg_catalog.=) s.oid
        WHERE NOT g.tgisinternal
        UNION ALL
        SELECT 'policy ' OPERATOR(pg_catalog.||) p.polname OPERATOR(pg_catalog.||) ' on '
               OPERATOR(pg_catalog.||) c.relname OPERATOR(pg_catalog.||) ': ',
               'pg_catalog.pg_policy'::pg_catalog.regclass, p.oid
        FROM pg_catalog.pg_policy p
        JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.polrelid
        JOIN schema s ON c.relnamespace OPERATOR(pg_catalog.=) s.oid
        UNION ALL
        SELECT 'rule ' OPERATOR(pg_catalog.||) r.rulename OPERATOR(pg_catalog.||) ' on '
               OPERATOR(pg_catalog.||) c.relname OPERATOR(pg_catalog.||) ': ',
               'pg_catalog.pg_rewrite'::pg_catalog.regclass, r.oid
        FROM pg_catalog.pg_rewrite r
        JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.ev_class
        JOIN schema s ON c.relnamespace OPERATOR(pg_catalog.=) s.oid
    ) AS e (what, classid, objid)
    JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) e.classid
                                AND d.objid OPERATOR(pg_catalog.=) e.objid
    JOIN LATERAL (
        SELECT p.proowner FROM pg_catalog.pg_proc p
        WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
          AND p.oid OPERATOR(pg_catalog.=) d.refobjid
        UNION ALL
        SELECT o.oprowner FROM pg_catalog.pg_operator o
        WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_operator'::pg_catalog.regclass
          AND o.oid OPERATOR(pg_catalog.=) d.refobjid
        UNION ALL
        SELECT t.typowner FROM pg_catalog.pg_type t
        WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass
          AND t.oid OPERATOR(pg_catalog.=) d.refobjid
        UNION ALL  -- a view named as a regclass constant (table_to_xml('app.v'::regclass, ...) runs its functions)
        SELECT r.relowner FROM pg_catalog.pg_class r
        WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
          AND r.oid OPERATOR(pg_catalog.=) d.refobjid
    ) AS u (owner) ON true
    UNION ALL
    -- An event trigger's function (any in the database, made by a superuser): it runs in the session of
    -- whoever runs DDL, with its rights: the owner's grant-read, init --layout, migrations, bulk loads.
    SELECT 'event trigger ' OPERATOR(pg_catalog.||) e.evtname OPERATOR(pg_catalog.||) ': '
           OPERATOR(pg_catalog.||) pg_catalog.pg_describe_object('pg_catalog.pg_proc'::pg_catalog.regclass, p.oid, 0),
           p.proowner
    FROM pg_catalog.pg_event_trigger e JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) e.evtfoid
    WHERE e.evtenabled OPERATOR(pg_catalog.<>) 'D'
    UNION ALL
    -- A foreign key to one of its tables, from a table of another role's (made while it held REFERENCES):
    -- PostgreSQL checks each row inserted there with a query on the store's table run as its owner, casting
    -- the referencing column (through a cast of that role's own); it checks each delete from the store's
    -- table with a query on the referencing table run in your session as that role (planning it folds the
    -- constant calls in its index expressions: a function of its own there set the session's search_path,
    -- and its = on bigint ran in your next statement with your rights), and an ON DELETE or ON UPDATE
    -- action writes that table in your session (its triggers, defaults and domain checks too).
    SELECT pg_catalog.format('foreign key %%I on %%s', k.conname, k.conrelid::pg_catalog.regclass), r.relowner
    FROM pg_catalog.pg_constraint k
    JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) k.conrelid
    JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) k.confrelid
    JOIN schema s ON t.relnamespace OPERATOR(pg_catalog.=) s.oid
    WHERE k.contype OPERATOR(pg_catalog.=) 'f'
)
SELECT
    CURRENT_USER,
    pg_catalog.pg_get_userbyid(s.nspowner),
    EXISTS (SELECT FROM mine WHERE mine.role OPERATOR(pg_catalog.=) s.nspowner)
        OR EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) s.nspowner
                   AND (r.rolsuper OR r.rolname OPERATOR(pg_catalog.=) ANY (%(trusted)s::pg_catalog.text[]))),
    (SELECT pg_catalog.string_agg(CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                       ELSE pg_catalog.pg_get_userbyid(a.grantee) END, ', ')
     FROM pg_catalog.aclexplode(s.nspacl) a
     WHERE a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
       AND NOT EXISTS (SELECT FROM owners WHERE owners.role OPERATOR(pg_catalog.=) a.grantee)),
    (SELECT pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                                ELSE pg_catalog.pg_get_userbyid(a.grantee) END, ', ')
     FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
     WHERE c.relnamespace OPERATOR(pg_catalog.=) s.oid AND a.privilege_type OPERATOR(pg_catalog.=) 'TRIGGER'
       AND NOT EXISTS (SELECT FROM owners WHERE owners.role OPERATOR(pg_catalog.=) a.grantee)),
    (SELECT pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                                ELSE pg_catalog.pg_get_userbyid(a.grantee) END, ', ')
     FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_attribute t ON t.attrelid OPERATOR(pg_catalog.=) c.oid AND t.attacl IS NOT NULL
     CROSS JOIN LATERAL (SELECT * FROM pg_catalog.aclexplode(c.relacl)
                         UNION ALL SELECT * FROM pg_catalog.aclexplode(t.attacl)) a
     WHERE c.relnamespace OPERATOR(pg_catalog.=) s.oid AND a.privilege_type OPERATOR(pg_catalog.=) 'REFERENCES'
       AND NOT EXISTS (SELECT FROM owners WHERE owners.role OPERATOR(pg_catalog.=) a.grantee)),
    -- INSERT, UPDATE, DELETE or TRUNCATE on the store's own records (on the table or a column), but
    -- UPDATE of the columns of store_info that writers update, and INSERT there (a writer's first add
    -- records the scheme; the one row there is then changed by UPDATE only).
    (SELECT pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                                ELSE pg_catalog.pg_get_userbyid(a.grantee) END, ', ')
     OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||)
     pg_catalog.string_agg(DISTINCT a.privilege_type OPERATOR(pg_catalog.||) ' on ' OPERATOR(pg_catalog.||) c.relname, ', ')
     OPERATOR(pg_catalog.||) ')'
     FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_attribute t ON t.attrelid OPERATOR(pg_catalog.=) c.oid AND t.attacl IS NOT NULL
     CROSS JOIN LATERAL (SELECT e.grantee, e.privilege_type, NULL::pg_catalog.name FROM pg_catalog.aclexplode(c.relacl) e
                         UNION ALL
                         SELECT e.grantee, e.privilege_type, t.attname FROM pg_catalog.aclexplode(t.attacl) e)
                         AS a (grantee, privilege_type, attname)
     WHERE c.relnamespace OPERATOR(pg_catalog.=) s.oid
       AND c.relname OPERATOR(pg_catalog.=) ANY (%(guarded)s::pg_catalog.name[])
       AND a.privilege_type OPERATOR(pg_catalog.=) ANY ('{INSERT,UPDATE,DELETE,TRUNCATE}'::pg_catalog.text[])
       AND NOT (c.relname OPERATOR(pg_catalog.=) 'store_info'
                AND (a.privilege_type OPERATOR(pg_catalog.=) 'INSERT'
                     OR a.privilege_type OPERATOR(pg_catalog.=) 'UPDATE'
                        AND a.attname OPERATOR(pg_catalog.=) ANY (%(writable)s::pg_catalog.name[])))
       AND NOT EXISTS (SELECT FROM owners WHERE owners.role OPERATOR(pg_catalog.=) a.grantee)),
    (SELECT o.what OPERATOR(pg_catalog.||) ' belongs to role ' OPERATOR(pg_catalog.||) pg_catalog.pg_get_userbyid(o.owner)
     FROM objects o WHERE NOT EXISTS (SELECT FROM owners WHERE owners.role OPERATOR(pg_catalog.=) o.owner) LIMIT 1),
    -- A condition that runs SQL given as text or a name (query_to_xml('SELECT app.f()', ...)) records
    -- no dependency on what that SQL calls: whoever made such a trigger, it is refused.
    (SELECT pg_catalog.string_agg(g.tgname OPERATOR(pg_catalog.||) ' on ' OPERATOR(pg_catalog.||) c.relname, ', ')
     FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) g.tgrelid
     WHERE c.relnamespace OPERATOR(pg_catalog.=) s.oid AND NOT g.tgisinternal AND g.tgqual IS NOT NULL
       AND (pg_catalog.substring(pg_catalog.pg_get_triggerdef(g.oid), %(condition)s)
            OPERATOR(pg_catalog.~*) %(runs_sql_text)s
            -- or calls a volatile function (pg_catalog's own too, which pg_depend does not list):
            -- set_config (a search_path for the session), lo_export, setval, ...
            OR EXISTS (SELECT FROM pg_catalog.regexp_matches(g.tgqual::pg_catalog.text, %(called)s, 'g') AS m (a)
                       JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) (m.a[1])::pg_catalog.oid
                       WHERE p.provolatile OPERATOR(pg_catalog.=) 'v'))),
    -- Row security that hides rows of the store's tables from this session: searches, --skip-near-duplicates,
    -- dups and recluster would silently work on the rows its policies let through.
    (SELECT pg_catalog.string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_catalog.pg_class c
     WHERE c.relnamespace OPERATOR(pg_catalog.=) s.oid AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}'::"char"[])
       AND c.relrowsecurity AND pg_catalog.row_security_active(c.oid)),
    pg_catalog.to_regclass(%(version_table)s) IS NOT NULL
FROM (SELECT) AS one LEFT JOIN schema s ON true
"""


def check_schema(cursor: Any, schema: str, where: str | Callable[[], str]) -> bool:
    """Refuse a schema another role can change (:class:`UntrustedSchemaError`); whether its
    version table exists (False also when there is no schema).

    ``where`` names the database in the message; a callable is asked only then (``query``
    renders URLs with SQLAlchemy, which it does not import otherwise).
    """
    row = cursor.execute(
        _CHECK,
        {
            "schema": schema,
            "trusted": trusted_owners(),
            "version_table": f"{schema}.alembic_version",
            "functions": list(LIBRARY_FUNCTIONS),
            "condition": _TRIGGER_CONDITION,
            "runs_sql_text": _RUNS_SQL_TEXT,
            "called": _CALLED,
            "guarded": list(GUARDED_TABLES),
            "writable": list(WRITABLE_STORE_INFO),
        },
    ).fetchone()
    me, owner, owner_trusted, creators, triggerers, referencers, writers, foreign, sql_text, hidden, versioned = row
    if owner is None:
        if foreign:  # an event trigger, which the migrations creating the schema would run
            where = where() if callable(where) else where
            raise UntrustedSchemaError(
                f"database {where} holds objects another role made: {foreign}, which creating the store would run "
                "with your rights: have a superuser drop or check it"
            )
        return False
    if not (creators or triggerers or referencers or writers or foreign or sql_text or hidden) and owner_trusted:
        return bool(versioned)
    where = where() if callable(where) else where
    if hidden and owner_trusted and not (creators or triggerers or referencers or writers or foreign or sql_text):
        raise UntrustedSchemaError(
            f"row security on {schema}.{hidden.replace(', ', f', {schema}.')} in database {where} hides rows from "
            f"role {me}: its searches, --skip-near-duplicates, dups and recluster would silently miss the documents "
            f"the policies leave out: have {owner} run ALTER TABLE ... DISABLE ROW LEVEL SECURITY (or NO FORCE ROW "
            f"LEVEL SECURITY, for {owner} itself), or give {me} the store in a database of its own"
        )
    if not owner_trusted:
        raise UntrustedSchemaError(
            f"schema {schema} in database {where} belongs to role {owner}, not to {me} or a role {me} is a "
            f"member of, so {owner} could change the functions the store runs with your rights: have {owner} "
            f"or a superuser drop the schema (then run init), or set {TRUSTED_OWNERS_VARIABLE}={owner} if "
            f"it is the store of {owner} you mean to use"
        )
    if creators:
        raise UntrustedSchemaError(
            f"schema {schema} in database {where} (owner {owner}) lets {creators} create objects in it, who could "
            f"then replace the functions this store runs: have {owner} run REVOKE CREATE ON SCHEMA {schema} "
            f"FROM {creators}"
        )
    if triggerers:
        raise UntrustedSchemaError(
            f"schema {schema} in database {where} (owner {owner}) lets {triggerers} create triggers on its "
            "tables, whose WHEN conditions run with the rights of whoever writes them (yours): have "
            f"{owner} run REVOKE TRIGGER ON ALL TABLES IN SCHEMA {schema} FROM {triggerers}, then drop the "
            "triggers on them it did not make"
        )
    if referencers:
        raise UntrustedSchemaError(
            f"schema {schema} in database {where} (owner {owner}) lets {referencers} make foreign keys to its "
            f"tables, whose checks PostgreSQL runs with the rights of {owner} through casts the referencing role "
            f"may write (its code, as {owner}, whenever it inserts a row of its own): have {owner} run REVOKE "
            f"REFERENCES ON ALL TABLES IN SCHEMA {schema} FROM {referencers} (and any grant of it on columns), "
            "then drop the foreign keys to them it did not make"
        )
    if writers:
        roles = writers.rsplit(" (", 1)[0]
        tables = ", ".join(f"{schema}.{table}" for table in GUARDED_TABLES if table != "store_info")
        raise UntrustedSchemaError(
            f"schema {schema} in database {where} (owner {owner}) lets {writers} write the store's own records "
            "(the masks searches probe with, the revision, the scheme), which a rewrite turns into searches that "
            f"silently miss near duplicates or documents fingerprinted with another scheme: have {owner} run REVOKE "
            f"INSERT, UPDATE, DELETE, TRUNCATE ON {tables} FROM {roles} and REVOKE UPDATE, DELETE, TRUNCATE ON "
            f"{schema}.store_info FROM {roles} (grants on columns too), then GRANT UPDATE "
            f"({', '.join(WRITABLE_STORE_INFO)}) ON {schema}.store_info TO those of them that remove or recluster"
        )
    if sql_text and not foreign:
        raise UntrustedSchemaError(
            f"schema {schema} in database {where} (owner {owner}) has a trigger whose condition runs SQL given as "
            f"text or calls a volatile function ({sql_text}): what that SQL calls, or what a changed search_path makes your "
            f"next statements call, cannot be checked, and it would run with your rights when you write: have "
            f"{owner} (or a superuser) drop it, or move the condition into the trigger's function"
        )
    raise UntrustedSchemaError(
        f"schema {schema} in database {where} (owner {owner}) holds objects another role made: {foreign}, "
        f"which this store would run or write through with your rights: have {owner} (or a superuser) "
        "drop or check it"
    )


# What the masks tables must hold, as revisions 0001 and 0011 made them: every 16-bit mask once,
# weighing its bits (block_masks), and every 22-bit mask of at most 5 bits (wide_masks). Their
# primary keys (the owner's: no other role can drop them) keep each mask once, so a count of rows
# that are such masks, equal to the count of rows and to the number there are, is the whole set:
# exact, and one scan (8-18 ms for the two, at a load of 3.5) where an ordered digest takes 30-70 ms.
MASKS = {"block_masks": (16, 16, 65536), "wide_masks": (22, 5, 35443)}
_MASKS = """
SELECT {columns}
"""
_MASKS_OF = """
(SELECT pg_catalog.count(*) OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
        pg_catalog.count(*) FILTER (WHERE m.mask OPERATOR(pg_catalog.>=) 0
                                      AND m.mask OPERATOR(pg_catalog.<) {limit}
                                      AND m.weight OPERATOR(pg_catalog.<=) {weight}
                                      AND m.weight OPERATOR(pg_catalog.=) pg_catalog.bit_count(m.mask::pg_catalog.bit({bits})))
 FROM {schema}.{table} m)
"""


def check_records(cursor: Any, schema: str, where: str | Callable[[], str]) -> None:
    """Refuse a store whose masks tables are not what the migrations made (:class:`UntrustedSchemaError`).

    A role that may write them without a grant the schema check sees (a member of
    ``pg_write_all_data``) could delete or change masks, and searches would silently miss near
    duplicates. Run on every open of a store at the newest revision.
    """
    columns = ", ".join(
        _MASKS_OF.format(limit=1 << bits, weight=weight, bits=bits, schema=schema, table=table)
        for table, (bits, weight, _) in MASKS.items()
    )
    row = cursor.execute(_MASKS.format(columns=columns)).fetchone()
    for (table, (_, _, expected)), counted in zip(MASKS.items(), row, strict=True):
        total, good = (int(n) for n in counted.split("/"))
        if total != expected or good != expected:
            where = where() if callable(where) else where
            raise UntrustedSchemaError(
                f"table {schema}.{table} in database {where} holds {total} rows ({good} of them right) where the "
                f"store's revision made {expected}: a role that may write it (a member of pg_write_all_data, or one "
                "granted writes on it) changed the masks searches probe with, and searches would silently miss near "
                "duplicates: have the store's owner restore it (docs/operations.md, on a shared database) and "
                "take that right away"
            )


# Default privileges (ALTER DEFAULT PRIVILEGES, the role's own or a superuser's for it) that would give
# another role, as the migrations make the store's tables and schema, what lets it run code with the
# rights of the session or of the tables' owner: TRIGGER or REFERENCES on tables, CREATE on schemas.
_DEFAULT_GRANTS = """
SELECT pg_catalog.string_agg(DISTINCT pg_catalog.format('%%s on new %%s to %%s', a.privilege_type,
           CASE d.defaclobjtype WHEN 'r' THEN 'tables' ELSE 'schemas' END,
           CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee) END), ', ')
FROM pg_catalog.pg_default_acl d, pg_catalog.aclexplode(d.defaclacl) a
WHERE d.defaclrole OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r
                                            WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
  AND (d.defaclnamespace OPERATOR(pg_catalog.=) 0
       OR d.defaclnamespace OPERATOR(pg_catalog.=) (SELECT n.oid FROM pg_catalog.pg_namespace n
                                                    WHERE n.nspname OPERATOR(pg_catalog.=) %(schema)s))
  AND (d.defaclobjtype OPERATOR(pg_catalog.=) 'r'
       AND a.privilege_type OPERATOR(pg_catalog.=) ANY ('{TRIGGER,REFERENCES}'::pg_catalog.text[])
       OR d.defaclobjtype OPERATOR(pg_catalog.=) 'n' AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE')
  AND CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN true
           ELSE NOT pg_catalog.pg_has_role(a.grantee, CURRENT_USER, 'MEMBER') END
"""


def check_default_privileges(cursor: Any, schema: str, where: str | Callable[[], str]) -> None:
    """Refuse to make the store's tables or schema (:class:`UntrustedSchemaError`) where this role's
    default privileges would give another role TRIGGER or REFERENCES on them, or CREATE on the schema:
    that role could run code with your rights (or the tables' owner's) from the moment they exist,
    before any later open refuses the store."""
    granted = cursor.execute(_DEFAULT_GRANTS, {"schema": schema}).fetchone()[0]
    if granted:
        where = where() if callable(where) else where
        me = cursor.connection.info.user
        raise UntrustedSchemaError(
            f"database {where}: the default privileges of role {me} give {granted}, so the store's tables and schema "
            "would let that role run code with your rights as soon as they exist (nothing was changed): have "
            f"{me} (or a superuser) run ALTER DEFAULT PRIVILEGES FOR ROLE {me} REVOKE ... for them first"
        )
