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
  tables, every function, operator, type and relation a trigger's WHEN condition names, and
  every table holding a foreign key to one of its tables whose column is cast by a function,
  belongs to the schema's owner, a member of it, or a superuser;
- no trigger condition runs SQL given as text through pg_catalog's functions
  (query_to_xml('SELECT f()', ...) names nothing the check could follow), nor calls a volatile
  function (set_config: a search_path it sets for the session makes the writer's next
  statements call another role's operators; lo_export, setval, ...). One that calls a
  superuser's own function running SQL text is not seen (docs/limitations.md).

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
    UNION
    SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolsuper
    UNION
    SELECT m.member FROM pg_catalog.pg_auth_members m JOIN owners ON m.roleid OPERATOR(pg_catalog.=) owners.role
),
-- Each column of a foreign key to one of the schema's tables, its type followed through domains to the
-- base type: a referencing type other than the right input of the key's equality operator is cast to it
-- in the check PostgreSQL runs, as the owner of the referenced table, for every row the referencing
-- table's owner inserts (a cast of that owner's own, from a type of its own: its code, with those rights).
key_columns (constraint_oid, type_oid, operand) AS (
    SELECT k.oid, a.atttypid, o.oprright
    FROM pg_catalog.pg_constraint k
    JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) k.confrelid
    JOIN schema s ON t.relnamespace OPERATOR(pg_catalog.=) s.oid
    CROSS JOIN LATERAL ROWS FROM (pg_catalog.unnest(k.conkey), pg_catalog.unnest(k.conpfeqop)) AS u (attnum, operator)
    JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) k.conrelid
                                  AND a.attnum OPERATOR(pg_catalog.=) u.attnum
    JOIN pg_catalog.pg_operator o ON o.oid OPERATOR(pg_catalog.=) u.operator
    WHERE k.contype OPERATOR(pg_catalog.=) 'f'
    UNION
    SELECT c.constraint_oid, y.typbasetype, c.operand
    FROM key_columns c JOIN pg_catalog.pg_type y ON y.oid OPERATOR(pg_catalog.=) c.type_oid
    WHERE y.typtype OPERATOR(pg_catalog.=) 'd'
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
    -- What a trigger's WHEN condition calls (recorded as the trigger's dependencies, its function too).
    SELECT 'the condition of trigger ' OPERATOR(pg_catalog.||) g.tgname OPERATOR(pg_catalog.||) ' on '
           OPERATOR(pg_catalog.||) c.relname OPERATOR(pg_catalog.||) ': '
           OPERATOR(pg_catalog.||) pg_catalog.pg_describe_object(d.refclassid, d.refobjid, 0),
           u.owner
    FROM pg_catalog.pg_trigger g
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) g.tgrelid
    JOIN schema s ON c.relnamespace OPERATOR(pg_catalog.=) s.oid
    JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_trigger'::pg_catalog.regclass
                                AND d.objid OPERATOR(pg_catalog.=) g.oid
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
    WHERE NOT g.tgisinternal
    UNION ALL
    SELECT pg_catalog.format('foreign key %%I on %%s', k.conname, k.conrelid::pg_catalog.regclass), r.relowner
    FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class r ON r.oid OPERATOR(pg_catalog.=) k.conrelid
    WHERE EXISTS (SELECT FROM key_columns c JOIN pg_catalog.pg_type y ON y.oid OPERATOR(pg_catalog.=) c.type_oid
                  WHERE c.constraint_oid OPERATOR(pg_catalog.=) k.oid AND y.typtype OPERATOR(pg_catalog.<>) 'd'
                    AND c.type_oid OPERATOR(pg_catalog.<>) c.operand
                    -- a binary-coercible cast (varchar to text) runs nothing, and only a superuser makes one
                    AND NOT EXISTS (SELECT FROM pg_catalog.pg_cast x
                                    WHERE x.castsource OPERATOR(pg_catalog.=) c.type_oid
                                      AND x.casttarget OPERATOR(pg_catalog.=) c.operand
                                      AND x.castmethod OPERATOR(pg_catalog.=) 'b'))
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
        },
    ).fetchone()
    me, owner, owner_trusted, creators, triggerers, referencers, foreign, sql_text, versioned = row
    if owner is None:
        return False
    if owner_trusted and not creators and not triggerers and not referencers and not foreign and not sql_text:
        return bool(versioned)
    where = where() if callable(where) else where
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
