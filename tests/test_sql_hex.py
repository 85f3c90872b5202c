"""simhash.to_hex and simhash.from_hex give, in SQL, the hex fingerprints simhash-store prints, for applications in any language."""

from __future__ import annotations

import re

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simhash_store import bits
from simhash_store.cli import app

EDGES = (0, 1, 2**63 - 1, 2**63, 2**64 - 1)
# Hypothesis runs many examples against one database: the fixture's database is the same for all.
ONE_DATABASE = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
VALID = re.compile(r"(0[xX])?[0-9a-fA-F]{1,16}")
pytestmark = pytest.mark.every_backend  # SQL functions: each server version


def _plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def sql(database_url):
    with psycopg.connect(_plain(database_url), autocommit=True) as connection:
        yield connection


def _one(connection, statement: str, *parameters):
    return connection.execute(statement, parameters).fetchone()[0]


@ONE_DATABASE
@given(value=st.integers(0, 2**64 - 1))
@example(value=0)
@example(value=2**63 - 1)
@example(value=2**63)
@example(value=2**64 - 1)
def test_to_hex_prints_what_simhash_store_prints_and_from_hex_reads_it_back(sql, value):
    signed = bits.to_signed(value)
    assert _one(sql, "SELECT simhash.to_hex(%s::bigint)", signed) == bits.to_hex(value)
    assert _one(sql, "SELECT simhash.from_hex(%s)", bits.to_hex(value)) == signed
    assert _one(sql, "SELECT simhash.from_hex(simhash.to_hex(%s::bigint))", signed) == signed


@ONE_DATABASE
@given(value=st.integers(0, 2**64 - 1), prefix=st.sampled_from(["", "0x", "0X"]), upper=st.booleans())
@example(value=0, prefix="", upper=False)
@example(value=2**64 - 1, prefix="0X", upper=True)
def test_from_hex_takes_short_forms_any_case_and_0x(sql, value, prefix, upper):
    digits = format(value, "X" if upper else "x")  # 1 to 16 digits, no leading zeros
    assert _one(sql, "SELECT simhash.from_hex(%s)", prefix + digits) == bits.to_signed(value)
    assert bits.from_hex(prefix + digits.zfill(16)) == value  # the same fingerprint the library reads


@ONE_DATABASE
@given(candidate=st.text(alphabet="0123456789abcdefABCDEFxXg -+\n\t\u0660\uff10", max_size=20))
@example(candidate="")
@example(candidate="0x")
@example(candidate="1" * 17)
@example(candidate="0x" + "f" * 17)
@example(candidate=" 1")
@example(candidate="1\n")
@example(candidate="-1")
@example(candidate="\uff11")  # a full-width digit
def test_from_hex_refuses_anything_else_with_invalid_text_representation(sql, candidate):
    if VALID.fullmatch(candidate):
        digits = candidate[2:] if candidate[:2].lower() == "0x" else candidate
        assert _one(sql, "SELECT simhash.from_hex(%s)", candidate) == bits.to_signed(int(digits, 16))
        return
    with pytest.raises(psycopg.errors.InvalidTextRepresentation) as refused:
        sql.execute("SELECT simhash.from_hex(%s)", (candidate,))
    message = refused.value.diag.message_primary
    assert message.startswith("invalid fingerprint ") and "1 to 16 hex digits" in message and "\n" not in message


def test_null_in_null_out_and_usable_in_an_index_expression(sql):
    assert sql.execute("SELECT simhash.from_hex(NULL), simhash.to_hex(NULL)").fetchone() == (None, None)
    # IMMUTABLE: an application may index its own hex column by the fingerprint it stands for.
    sql.execute("CREATE TABLE public.crawl_hex (hex text)")
    sql.execute("CREATE INDEX ON public.crawl_hex (simhash.from_hex(hex))")
    sql.execute("INSERT INTO public.crawl_hex VALUES ('1a9ffed40a667204')")
    assert _one(sql, "SELECT simhash.to_hex(simhash.from_hex(hex)) FROM public.crawl_hex") == "1a9ffed40a667204"


def test_a_read_only_role_converts_and_searches_by_hex(database_url, make_role):
    plain = _plain(database_url)
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO simhash.documents (key, fingerprint) VALUES ('a', %s)", (bits.to_signed(2**64 - 2),)
        )
    role = make_role(database_url, prefix="simhash_reader")
    result = CliRunner().invoke(app, ["--db", database_url.render_as_string(hide_password=False), "grant-read", role])
    assert result.exit_code == 0, result.output
    with psycopg.connect(_plain(database_url.set(username=role, password=None))) as reader:
        rows = reader.execute(
            "SELECT simhash.to_hex(fingerprint), distance FROM simhash.near(simhash.from_hex('fffffffffffffffe'), 0)"
        ).fetchall()
        assert rows == [("fffffffffffffffe", 0)]
