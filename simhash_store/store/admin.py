"""Administration: read access for other roles, size and shape statistics, and upkeep
(VACUUM (ANALYZE) after large writes, through :mod:`simhash_store.maintenance`)."""

from __future__ import annotations

import warnings
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection

from .. import distributed as citus
from .. import maintenance
from ..embedded import SERVER_ROLES, UNSEEN_STATEMENT_SETTINGS, password_verifier
from ..errors import PermissionDeniedError, SimhashStoreWarning
from .connection import with_cursor
from .reads import count


def superuser_reach(cursor: psycopg.Cursor[Any]) -> list[str]:
    """See Store.superuser_reach: the current role itself when it is a superuser, else the
    superusers and server roles it is a member of."""
    cursor.execute(
        "SELECT r.rolname FROM pg_catalog.pg_roles r "
        "WHERE (r.rolsuper OR r.rolcreaterole OR r.rolname = ANY(%s)) "
        "AND pg_catalog.pg_has_role(current_user, r.oid, 'MEMBER') "
        "ORDER BY r.rolname <> current_user, r.rolname",
        (list(SERVER_ROLES),),
    )
    reach = [name for (name,) in cursor.fetchall()]
    if cursor.connection.info.server_version >= 150000:
        # ALTER SYSTEM on a setting (archive_command runs a program as the server's account)
        cursor.execute(
            "SELECT DISTINCT 'ALTER SYSTEM on ' || p.parname FROM pg_catalog.pg_parameter_acl p, "
            "pg_catalog.aclexplode(p.paracl) a WHERE a.privilege_type = 'ALTER SYSTEM' AND a.grantee <> 0 "
            "AND pg_catalog.pg_has_role(current_user, a.grantee, 'MEMBER') ORDER BY 1"
        )
        reach += [name for (name,) in cursor.fetchall()]
    return reach


# Predefined roles a read-only role may be a member of: they read statistics of tables only.
# Not pg_read_all_data: it reads pg_authid too, every role's SCRAM verifier (the store owner's
# included), with which a listener on the port of a stopped server passes for it to the owner's
# clients (they send it their statements and data), and with one such exchange logs in as them.
# Not pg_monitor, pg_read_all_stats or pg_read_all_settings either: they read every session's
# statement in pg_stat_activity (the owner's documents, a password being set) and settings only a
# superuser may read (on a standby, primary_conninfo may hold the replication password).
READ_ONLY_MEMBERSHIPS = ("pg_stat_scan_tables",)
# What makes a role more than a reader of the store, the first reason found: attributes that
# reach past the store, membership in any role but the read-only ones above (whether or not it
# inherits: SET ROLE switches to it), being a predefined role other than those (pg_signal_backend,
# pg_execute_server_program, pg_database_owner: its members, refused as readers, would be the
# readers, and the role was called one that "cannot write"), owning the database or anything in the schema, CREATE on
# the schema, and any write privilege on its tables (to the role or to PUBLIC, whole or on a
# column) or sequences, and a catalog column or function of pg_catalog that PUBLIC is not given
# (SELECT on pg_authid reads every role's SCRAM verifier, as pg_read_all_data does; EXECUTE on
# pg_read_file reads the server's files), or a function in C of any other schema PUBLIC is not
# given (an extension's: dblink_connect_u connects as any role the server trusts without a
# password, a superuser too; pageinspect's get_raw_page reads pg_authid's pages) or a SECURITY
# DEFINER function of another role's (it runs with that role's rights: one of the owner's that
# deletes documents made the "read-only" role a writer), unless the read-only roles above are
# (pgstattuple's, given to pg_stat_scan_tables). The role is found by
# its name as it is, never cast to regrole, which reads it as an identifier: "NewsReader" became
# newsreader (a traceback, or another role's check).
_WRITES_OR_MORE = """
SELECT 'has ' || a.attribute FROM pg_catalog.pg_roles r,
    LATERAL (VALUES ('SUPERUSER', r.rolsuper), ('CREATEROLE', r.rolcreaterole), ('CREATEDB', r.rolcreatedb),
                    ('REPLICATION', r.rolreplication), ('BYPASSRLS', r.rolbypassrls)) AS a (attribute, held)
    WHERE r.rolname = %(role)s AND a.held
UNION ALL
SELECT 'is a member of ' || m.rolname FROM pg_catalog.pg_roles m
    WHERE m.rolname <> %(role)s AND m.rolname <> ALL(%(read_only_roles)s)
      AND pg_catalog.pg_has_role(%(role)s, m.oid, 'MEMBER')
UNION ALL
SELECT 'is one of PostgreSQL''s predefined roles, whose rights reach past the store' FROM pg_catalog.pg_roles r
    WHERE r.rolname = %(role)s AND r.oid < 16384 AND r.rolname LIKE 'pg\\_%%' AND r.rolname <> ALL(%(read_only_roles)s)
UNION ALL
SELECT 'owns the database' FROM pg_catalog.pg_database d
    WHERE d.datname = pg_catalog.current_database() AND d.datdba = (SELECT t.oid FROM pg_catalog.pg_roles t WHERE t.rolname = %(role)s)
UNION ALL
SELECT 'may create in schema simhash' WHERE pg_catalog.has_schema_privilege(%(role)s, 'simhash', 'CREATE')
UNION ALL
SELECT 'owns simhash.' || c.relname FROM pg_catalog.pg_class c
    WHERE c.relnamespace = CAST('simhash' AS pg_catalog.regnamespace)
      AND c.relowner = (SELECT t.oid FROM pg_catalog.pg_roles t WHERE t.rolname = %(role)s)
UNION ALL
SELECT 'may write simhash.' || c.relname FROM pg_catalog.pg_class c
    WHERE c.relnamespace = CAST('simhash' AS pg_catalog.regnamespace) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
      AND (pg_catalog.has_table_privilege(%(role)s, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
           OR pg_catalog.has_any_column_privilege(%(role)s, c.oid, 'INSERT, UPDATE, REFERENCES'))
UNION ALL
SELECT 'may change the sequence simhash.' || c.relname FROM pg_catalog.pg_class c
    WHERE c.relnamespace = CAST('simhash' AS pg_catalog.regnamespace)
      AND CASE WHEN c.relkind = 'S' THEN pg_catalog.has_sequence_privilege(%(role)s, c.oid, 'USAGE, UPDATE') END
UNION ALL
SELECT 'may create in the database' WHERE pg_catalog.has_database_privilege(%(role)s, pg_catalog.current_database(), 'CREATE')
UNION ALL
SELECT 'holds ' || a.privilege_type || ' on the database' FROM pg_catalog.pg_database d, pg_catalog.aclexplode(d.datacl) a
    WHERE d.datname = pg_catalog.current_database() AND a.grantee = (SELECT t.oid FROM pg_catalog.pg_roles t WHERE t.rolname = %(role)s)
      AND a.privilege_type = 'TEMPORARY'
UNION ALL
SELECT 'may call ' || CAST(CAST(p.oid AS pg_catalog.regprocedure) AS pg_catalog.text) FROM pg_catalog.pg_proc p,
    pg_catalog.aclexplode(p.proacl) a
    WHERE p.pronamespace = CAST('pg_catalog' AS pg_catalog.regnamespace) AND p.proname LIKE 'lo\\_%%'
      AND a.grantee = (SELECT t.oid FROM pg_catalog.pg_roles t WHERE t.rolname = %(role)s)
UNION ALL
SELECT DISTINCT 'may read pg_catalog.' || c.relname FROM pg_catalog.pg_class c, pg_catalog.pg_attribute t
    WHERE c.relnamespace = CAST('pg_catalog' AS pg_catalog.regnamespace) AND c.relkind IN ('r', 'v', 'm')
      AND t.attrelid = c.oid AND t.attnum > 0 AND NOT t.attisdropped
      AND pg_catalog.has_column_privilege(%(role)s, c.oid, t.attnum, 'SELECT')
      AND NOT pg_catalog.has_column_privilege('public', c.oid, t.attnum, 'SELECT')
UNION ALL
SELECT 'may call ' || CAST(CAST(p.oid AS pg_catalog.regprocedure) AS pg_catalog.text) FROM pg_catalog.pg_proc p
    WHERE (p.pronamespace = CAST('pg_catalog' AS pg_catalog.regnamespace) AND p.proname NOT LIKE 'lo\\_%%'
           OR p.pronamespace <> CAST('pg_catalog' AS pg_catalog.regnamespace)
              AND (p.prolang IN (SELECT l.oid FROM pg_catalog.pg_language l WHERE l.lanname IN ('c', 'internal'))
                   OR p.prosecdef AND NOT pg_catalog.pg_has_role(%(role)s, p.proowner, 'USAGE')))
      AND pg_catalog.has_function_privilege(%(role)s, p.oid, 'EXECUTE')
      AND NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE')
      AND NOT EXISTS (SELECT FROM pg_catalog.unnest(CAST(%(read_only_roles)s AS pg_catalog.text[])) AS o (name)
                      WHERE pg_catalog.has_function_privilege(o.name, p.oid, 'EXECUTE'))
UNION ALL
SELECT 'may grant ' || a.privilege_type || ' on simhash.' || c.relname FROM pg_catalog.pg_class c,
    pg_catalog.aclexplode(c.relacl) a
    WHERE c.relnamespace = CAST('simhash' AS pg_catalog.regnamespace) AND a.is_grantable
      AND a.grantee = (SELECT t.oid FROM pg_catalog.pg_roles t WHERE t.rolname = %(role)s)
UNION ALL
SELECT 'may grant ' || a.privilege_type || ' on schema simhash' FROM pg_catalog.pg_namespace n,
    pg_catalog.aclexplode(n.nspacl) a
    WHERE n.nspname = 'simhash' AND a.is_grantable AND a.grantee = (SELECT t.oid FROM pg_catalog.pg_roles t WHERE t.rolname = %(role)s)
UNION ALL
SELECT 'gets ' || a.privilege_type || ' on what is made later' FROM pg_catalog.pg_default_acl d,
    pg_catalog.aclexplode(d.defaclacl) a
    WHERE a.grantee = (SELECT t.oid FROM pg_catalog.pg_roles t WHERE t.rolname = %(role)s)
      AND (d.defaclnamespace = 0 OR d.defaclnamespace = CAST('simhash' AS pg_catalog.regnamespace))
      AND (a.is_grantable OR a.privilege_type NOT IN ('SELECT', 'EXECUTE', 'USAGE'))
"""
# Added on servers that have them: per-table MAINTAIN (PostgreSQL 17: VACUUM FULL, LOCK ... ACCESS
# EXCLUSIVE, REINDEX) and privileges on settings (PostgreSQL 15: SET temp_file_limit = -1 undid
# the reader's bound; ALTER SYSTEM on archive_command runs a program as the server's account).
_MAINTAIN = """
UNION ALL
SELECT 'may maintain simhash.' || c.relname FROM pg_catalog.pg_class c
    WHERE c.relnamespace = CAST('simhash' AS pg_catalog.regnamespace) AND c.relkind IN ('r', 'p', 'm')
      AND pg_catalog.has_table_privilege(%(role)s, c.oid, 'MAINTAIN')
"""
_SETTINGS = """
UNION ALL
SELECT 'may ' || a.privilege_type || ' ' || p.parname FROM pg_catalog.pg_parameter_acl p,
    pg_catalog.aclexplode(p.paracl) a
    WHERE pg_catalog.pg_has_role(%(role)s, a.grantee, 'MEMBER') AND a.grantee <> 0
"""


def _writes_or_more(raw: psycopg.Connection) -> str:
    version = raw.info.server_version
    return _WRITES_OR_MORE + (_MAINTAIN if version >= 170000 else "") + (_SETTINGS if version >= 150000 else "")


def _hide_this_transactions_statements(raw: psycopg.Connection) -> None:
    """SET LOCAL each of UNSEEN_STATEMENT_SETTINGS the server has and this session may set."""
    may_set = "pg_catalog.current_setting('is_superuser') = 'on'"
    if raw.info.server_version >= 150000:  # privileges on settings
        may_set += " OR pg_catalog.has_parameter_privilege(s.name, 'SET')"
    names = raw.execute(
        f"SELECT s.name FROM pg_catalog.pg_settings s WHERE s.name = ANY(%s) AND ({may_set}) ORDER BY s.name",
        (list(UNSEEN_STATEMENT_SETTINGS),),
    ).fetchall()
    for (name,) in names:
        raw.execute(
            sql.SQL("SET LOCAL {} = {}").format(
                sql.Identifier(*name.split(".")), sql.Literal(UNSEEN_STATEMENT_SETTINGS[name])
            )
        )


def grant_read_only(raw: psycopg.Connection, role: str, password: str | None = None) -> None:
    """Grant ``role`` search and read access (in the caller's transaction); see Store.grant_read_only.

    Raw psycopg: GRANT takes an identifier (psycopg.sql), and the grants are checked afterwards.
    """
    who = sql.Identifier(role)
    statements = [
        sql.SQL("GRANT USAGE ON SCHEMA simhash TO {}"),
        sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA simhash TO {}"),
        sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA simhash GRANT SELECT ON TABLES TO {}"),
        sql.SQL("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA simhash TO {}"),
    ]
    found = raw.execute(
        "SELECT r.rolsuper, r.rolcanlogin, pg_catalog.pg_has_role(current_user, n.nspowner, 'MEMBER'), "
        "pg_catalog.pg_get_userbyid(n.nspowner) FROM pg_catalog.pg_roles r "
        "LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = 'simhash' WHERE r.rolname = %s",
        (role,),
    ).fetchone()
    if not found:
        raise PermissionDeniedError(f"there is no role {role!r}; create it first (CREATE ROLE ... LOGIN)")
    superuser, can_login, acts_for_owner, owner = found
    if password is not None and (superuser or not can_login):
        what = "a superuser, not a read-only role" if superuser else "NOLOGIN (ALTER ROLE ... LOGIN first)"
        raise PermissionDeniedError(f"role {role!r} is {what}: no password set, nothing granted")
    absent = citus.workers_without_role(raw, role)
    if absent:
        raise PermissionDeniedError(
            f"role {role!r} exists on the coordinator but not on the Citus worker(s) {', '.join(absent)}: "
            "create it there too, or drop it and create it again while connected to the store's database "
            "on the coordinator, where Citus creates a new role on every worker"
        )
    for statement in statements:
        raw.execute(statement.format(who))
    if acts_for_owner:
        # Also the tables the store's owner creates later (its migrations), when that is another role.
        raw.execute(
            sql.SQL("ALTER DEFAULT PRIVILEGES FOR ROLE {} IN SCHEMA simhash GRANT SELECT ON TABLES TO {}").format(
                sql.Identifier(owner), who
            )
        )
    # Checked, not trusted: a GRANT by a role without the grant option succeeds with a warning.
    missing = raw.execute(
        "SELECT 'schema simhash' WHERE NOT pg_catalog.has_schema_privilege(%(role)s, 'simhash', 'USAGE') "
        "UNION ALL SELECT 'table simhash.' || c.relname FROM pg_catalog.pg_class c "
        "WHERE c.relnamespace = CAST('simhash' AS pg_catalog.regnamespace) AND c.relkind IN ('r', 'p', 'v', 'm') "
        "AND NOT pg_catalog.has_table_privilege(%(role)s, c.oid, 'SELECT') "
        "UNION ALL SELECT 'function simhash.' || p.proname FROM pg_catalog.pg_proc p "
        "WHERE p.pronamespace = CAST('simhash' AS pg_catalog.regnamespace) "
        "AND NOT pg_catalog.has_function_privilege(%(role)s, p.oid, 'EXECUTE')",
        {"role": role},
    ).fetchall()
    if missing:
        me, owner = raw.execute(
            "SELECT current_user, pg_catalog.pg_get_userbyid(nspowner) FROM pg_catalog.pg_namespace "
            "WHERE nspname = 'simhash'"
        ).fetchone()
        raise PermissionDeniedError(
            f"role {me} may not grant read access to the store ({missing[0][0]} not granted; "
            f"PostgreSQL granted nothing): run grant-read as the store's owner ({owner}) or a superuser"
        )
    query = _writes_or_more(raw)
    writes = raw.execute(query, {"role": role, "read_only_roles": list(READ_ONLY_MEMBERSHIPS)}).fetchall()
    if writes:  # the caller's transaction is rolled back: nothing granted
        raise PermissionDeniedError(
            f"role {role!r} {writes[0][0]}: it could do more than read the store, so it is not made a read-only role "
            "(nothing granted, no password set): revoke that first, or use a role of its own"
        )
    if password is not None:
        # A verifier, not the password: it never reaches the server. Nor is the statement shown or
        # kept where others read it (pg_stat_activity, pg_stat_statements, the server's log), as far
        # as this session may say so: a superuser may; another role only the settings granted to it.
        _hide_this_transactions_statements(raw)
        verifier = sql.Literal(password_verifier(raw, role, password))
        try:
            raw.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(who, verifier))
        except psycopg.errors.InsufficientPrivilege:  # the caller's transaction is rolled back: no grants either
            raise PermissionDeniedError(
                f"role {raw.info.user} may not set the password of {role!r} (nothing granted): run grant-read "
                "--password as a superuser or a role with CREATEROLE (for the embedded server: without --db, "
                "over its Unix socket)"
            ) from None


def stats(connection: Connection, buckets: int) -> dict[str, Any]:
    """Documents, sizes, server version and the largest block buckets."""
    documents = count(connection)
    total, heap = citus.size_functions(connection.connection.driver_connection)
    sizes = connection.execute(
        text(
            f"SELECT {total}('simhash.documents') AS total, "
            f"{heap}('simhash.documents') AS heap, "
            "pg_catalog.pg_database_size(pg_catalog.current_database()) AS database, "
            "pg_catalog.current_setting('server_version') AS version"
        )
    ).one()
    largest = {}
    for n in range(4):
        rows = connection.execute(
            text(
                f"SELECT block{n} AS value, pg_catalog.count(*) AS documents FROM simhash.documents "
                f"GROUP BY block{n} ORDER BY count(*) DESC, block{n} LIMIT :buckets"
            ),
            {"buckets": buckets},
        )
        largest[f"block{n}"] = [{"value": f"{r.value:04x}", "documents": r.documents} for r in rows]
    return {
        "server_version": sizes.version,
        "documents": documents,
        "table_bytes": sizes.total,
        "heap_bytes": sizes.heap,
        "database_bytes": sizes.database,
        "largest_block_buckets": largest,
    }


class Upkeep:
    """Rows one store changed since it last vacuumed, and the table's size then: when to optimize."""

    def __init__(self) -> None:
        self.changes = 0
        self.rows_at_optimize: float | None = None
        self.warned = False

    def optimize(self, engine: Engine, lock_timeout: float) -> maintenance.Maintenance:
        # Raw psycopg in autocommit: VACUUM cannot run inside a transaction block.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            raw = connection.connection.driver_connection
            done = maintenance.vacuum_analyze(raw, lock_timeout)
            self.rows_at_optimize = maintenance.estimated_rows(raw)
        self.changes = 0
        return done

    def optimize_if_grown(self, engine: Engine, lock_timeout: float) -> None:
        """After a write: VACUUM (ANALYZE) once the rows changed through this store since the last one
        exceed a few percent of the table; a role that may not says so once, as a warning."""
        if self.changes < maintenance.MIN_ROWS:
            return
        if self.rows_at_optimize is None:
            self.rows_at_optimize = with_cursor(engine, maintenance.estimated_rows)
        if not maintenance.needs_maintenance(self.changes, self.rows_at_optimize):
            return
        try:
            done = self.optimize(engine, lock_timeout)
        except (psycopg.errors.QueryCanceled, psycopg.OperationalError) as exc:
            # The write is committed: a VACUUM another session cancels (pg_cancel_backend, a
            # statement_timeout) or whose connection is lost costs the upkeep, not the write.
            reason = (exc.diag.message_primary or str(exc)).strip().splitlines()[0]
            done = maintenance.Maintenance(vacuumed=False, analyzed=False, reason=reason)
            self.changes = 0
        if done.reason and not self.warned:
            self.warned = True
            what = (
                "analyzed it only" if done.analyzed else "its statistics and visibility map are stale until autovacuum"
            )
            warnings.warn(
                f"could not vacuum {maintenance.TABLE} after the write ({done.reason}); {what}: "
                "queries may be slow until its owner runs `simhash-store optimize`",
                SimhashStoreWarning,
                stacklevel=4,
            )
