"""Containment search: one article inside a longer page, from the segments a store keeps (real PostgreSQL)."""

from __future__ import annotations

import json
import tracemalloc

import psycopg
import pytest
from sqlalchemy import create_engine

from simhash_store import fingerprint, migrate
from simhash_store.bits import from_signed, to_signed
from simhash_store.errors import InvalidValueError, SimhashStoreError
from simhash_store.segments import segment_fingerprints, segments
from simhash_store.store import NewDocument, Store


def _plain(url) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def document(key: str, text: str, with_segments: bool = True) -> NewDocument:
    return NewDocument(key, fingerprint(text), segments=segment_fingerprints(text) if with_segments else None)


@pytest.fixture
def texts(sample_laws, sample_paragraphs):
    """An article (a law's middle), a page with it between other texts (the article about 30% of it), others."""
    article = "\n".join(sample_laws[0].split("\n")[20:80])
    page = "\n".join([sample_laws[1][:2500], article, "\n".join(sample_paragraphs[:4])])
    return {
        "article": article,
        "page": page,
        "other-law": sample_laws[2],
        "paragraphs": "\n".join(sample_paragraphs[5:9]),
    }


@pytest.fixture
def unrelated(sample_laws):
    return sample_laws[6]


def segment_rows(url) -> list[tuple[str, int, int]]:
    with psycopg.connect(_plain(url)) as connection:
        return connection.execute(
            "SELECT d.key, s.segment, s.fingerprint FROM simhash.segments s JOIN simhash.documents d ON d.id = s.document_id "
            "ORDER BY 1, 2"
        ).fetchall()


def test_segments_are_content_defined_so_an_embedded_article_keeps_its_inner_segments(texts):
    inside = set(segment_fingerprints(texts["page"]))
    own = segment_fingerprints(texts["article"])
    assert len(own) >= 4
    assert sum(value in inside for value in own) >= len(own) - 1  # at most an edge differs
    assert segment_fingerprints(texts["article"]) == own  # deterministic
    assert segments("") == [] and segments("。。\n\n；") == []
    with pytest.raises(ValueError):
        segments("文本", divisor=0)


def test_off_by_default_and_then_costs_nothing(database_url, texts):
    with Store(database_url) as store:
        store.init()
        assert store.keeps_segments is False
        store.add([document(key, text) for key, text in texts.items()])  # segments given, not kept
        assert segment_rows(database_url) == []
        with pytest.raises(SimhashStoreError, match="keeps no segments"):
            store.query_containment(texts["article"])


def test_segments_are_written_and_removed_with_their_documents(database_url, texts):
    with Store(database_url) as store:
        store.init(segments=True)
        assert store.keeps_segments
        store.add([document(key, text) for key, text in texts.items()])
        rows = segment_rows(database_url)
        expected = sorted(
            (key, n, to_signed(value))
            for key, text in texts.items()
            for n, value in enumerate(segment_fingerprints(text))
        )
        assert rows == expected
        # A new text replaces the segments; a document written without segments keeps none.
        store.add([document("page", texts["other-law"]), document("article", texts["article"], with_segments=False)])
        keys = {key for key, _, _ in segment_rows(database_url)}
        assert "article" not in keys
        assert [v for k, _, v in segment_rows(database_url) if k == "page"] == [
            to_signed(v) for v in segment_fingerprints(texts["other-law"])
        ]
        store.remove(["page", "other-law"])
        assert {key for key, _, _ in segment_rows(database_url)} == {"paragraphs"}


def test_segments_are_replaced_and_removed_under_a_publication_of_every_table(database_url, texts):
    # A superuser publishes every table of the database (logical replication, change capture):
    # PostgreSQL then refuses deletes from a table without a replica identity, and segments has no
    # primary key, so remove and a changed re-add stopped in one line (revision 0014: REPLICA IDENTITY FULL).
    with psycopg.connect(_plain(database_url), autocommit=True) as connection:
        connection.execute("CREATE PUBLICATION every_table FOR ALL TABLES")
    with Store(database_url) as store:
        store.init(segments=True)
        store.add([document(key, text) for key, text in texts.items()])
        store.add([document("page", texts["other-law"])])
        store.remove(["other-law"])
        assert {key for key, _, _ in segment_rows(database_url)} == {"article", "page", "paragraphs"}
        assert [v for k, _, v in segment_rows(database_url) if k == "page"] == [
            to_signed(v) for v in segment_fingerprints(texts["other-law"])
        ]


def test_query_containment_finds_the_article_inside_the_page_with_direction_and_score(database_url, texts, unrelated):
    with Store(database_url) as store:
        store.init(segments=True)
        store.add([document(key, text) for key, text in texts.items() if key != "article"])
        found = store.query_containment(texts["article"])
        assert [m.key for m in found] == ["page"]
        assert found[0].inner == "query" and found[0].score >= 0.8
        assert found[0].matched <= found[0].segments == len(segment_fingerprints(texts["article"]))
        # The other way round: the page as the query holds the stored article.
        store.add([document("article", texts["article"])])
        store.remove(["page"])
        holds = store.query_containment(texts["page"])
        assert [(m.key, m.inner) for m in holds] == [("article", "stored")] and holds[0].score >= 0.8
        # Unrelated text finds nothing; the whole-document fingerprints are far apart.
        assert store.query_containment(unrelated) == []
        assert (fingerprint(texts["article"]) ^ fingerprint(texts["page"])).bit_count() > 11
        with pytest.raises(InvalidValueError):
            store.query_containment(texts["article"], max_distance=4)
        with pytest.raises(InvalidValueError):
            store.query_containment(texts["article"], min_score=1.5)


def test_containment_pairs_names_the_inner_document(database_url, texts):
    with Store(database_url) as store:
        store.init(segments=True)
        store.add([document(key, text) for key, text in texts.items()])
        pairs = store.containment_pairs()
        assert [(p.inner, p.outer) for p in pairs] == [("article", "page")]
        assert 0.8 <= pairs[0].score <= 1 and pairs[0].matched <= pairs[0].segments


def test_containment_pairs_come_as_read_in_the_order_of_the_reference(database_url):
    # 300 stored copies of one paragraph are 44,850 pairs: the list of them took 3 GB at 3,000 copies.
    # They are read a few thousand at a time, filtered and ordered in the server as Python would:
    # score, then segments (both descending), then keys by code point (not the database's collation).
    from simhash_store.store.containment import _direction

    base = [0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0F0F_F0F0_1234_8765, 0x1111_2222_3333_4444]
    copies = {f"copy-{i:03d}": (base[0], base[1], base[2]) for i in range(300)}
    others = {
        "Zebra": (base[0], base[1]),
        "apple": (base[0] ^ 1, base[1], base[2], base[3]),
        "Äpfel": (base[2] ^ 0b11, base[3]),
        "éclair": (base[3] ^ 1 << 60, 0x5555_6666_7777_8888, 0x9999_AAAA_BBBB_CCCC),
    }
    stored = {**copies, **others}
    with Store(database_url) as store:
        store.init(segments=True)
        store.add([NewDocument(key, values[0], segments=values) for key, values in stored.items()])
        for min_score in (0.0, 0.5, 0.67, 1.0):
            with psycopg.connect(_plain(database_url)) as connection:
                ids = dict(connection.execute("SELECT id, key FROM simhash.documents").fetchall())
                rows = connection.execute("SELECT * FROM simhash.containment_pairs(3)").fetchall()
            expected = []
            for id_a, id_b, matched_a, segments_a, matched_b, segments_b in rows:
                inner, matched, segments = _direction(matched_a, segments_a, matched_b, segments_b)
                pair = (ids[id_a], ids[id_b]) if inner == "query" else (ids[id_b], ids[id_a])
                if matched / segments >= min_score:
                    expected.append((*pair, matched / segments, matched, segments))
            expected.sort(key=lambda p: (-p[2], -p[4], p[0], p[1]))
            tracemalloc.start()
            try:
                found = store.iter_containment_pairs(min_score=min_score)
                assert not isinstance(found, list)
                count = 0
                for pair, wanted in zip(found, expected, strict=True):  # none kept: memory is the reading's
                    assert (pair.inner, pair.outer, pair.score, pair.matched, pair.segments) == wanted
                    count += 1
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert count > 44_850
            assert peak < 100 * count, f"{peak / count:.0f} bytes a pair at the peak"
            assert [(p.inner, p.outer) for p in store.containment_pairs(min_score=min_score)] == [
                e[:2] for e in expected
            ]


def _brute_force(
    stored: dict[str, tuple[int, ...]], query: tuple[int, ...], k: int
) -> dict[str, tuple[int, int, int, int]]:
    """(matched, segments, stored_matched, stored_segments) for every stored key sharing a near segment."""
    found = {}
    for key, values in stored.items():
        matched = sum(any((q ^ v).bit_count() <= k for v in values) for q in query)
        stored_matched = sum(any((q ^ v).bit_count() <= k for q in query) for v in values)
        if matched:
            found[key] = (matched, len(query), stored_matched, len(values))
    return found


@pytest.mark.parametrize("copies", [1, 8, 300])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_sql_functions_equal_brute_force(database_url, k, copies):
    # Segment fingerprints near each other at every distance 0..5, in planted groups, and unrelated
    # ones; some repeated ``copies`` times in a document and in the query (a paragraph repeated on a
    # page): each copy counts, and 300 copies answer in time in proportion to them, not their square.
    base = [0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0F0F_F0F0_1234_8765]
    stored = {
        "a": (base[0], base[1] ^ 0b111, 0x1111_2222_3333_4444, *[base[0]] * (copies - 1)),
        "b": (base[0] ^ 1, base[2] ^ (1 << 63), base[1] ^ 0b1111, *[base[0] ^ 1] * (copies - 1)),
        "c": (base[2] ^ 0b11 << 20, 0x5555_6666_7777_8888, *[base[2] ^ 0b11 << 20] * (copies // 2)),
        "d": (base[1] ^ 0b11111,),
    }
    query = (
        base[0] ^ (1 << 40),
        base[1],
        base[2] ^ 0b101,
        0x9999_AAAA_BBBB_CCCC,
        *[base[0] ^ (1 << 40)] * (copies - 1),
    )
    with Store(database_url) as store:
        store.init(segments=True)
        store.add([NewDocument(key, values[0], segments=values) for key, values in stored.items()])
        with psycopg.connect(_plain(database_url)) as connection:
            rows = connection.execute(
                "SELECT key, matched, segments, stored_matched, stored_segments FROM simhash.contained(%s::bigint[], %s)",
                ([to_signed(v) for v in query], k),
            ).fetchall()
            assert {key: tuple(rest) for key, *rest in rows} == _brute_force(stored, query, k)
            pairs = connection.execute("SELECT * FROM simhash.containment_pairs(%s)", (k,)).fetchall()
            ids = dict(connection.execute("SELECT id, key FROM simhash.documents").fetchall())
            expected = {}
            for a in sorted(stored):
                for b in sorted(stored):
                    if a < b and (found := _brute_force({b: stored[b]}, stored[a], k)):
                        expected[(a, b)] = found[b]
            assert {(ids[i], ids[j]): (ma, sa, mb, sb) for i, j, ma, sa, mb, sb in pairs} == expected
            with pytest.raises(psycopg.errors.InvalidParameterValue):
                connection.execute("SELECT * FROM simhash.contained(ARRAY[1::bigint], 4)")
        assert from_signed(to_signed(base[1])) == base[1]


def test_upgrade_from_0008_to_head_and_back_keeps_documents(empty_database_url, texts):
    engine = create_engine(empty_database_url)
    migrate.upgrade(engine, "0008")
    url = _plain(empty_database_url)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("INSERT INTO simhash.documents (key, fingerprint) VALUES ('old', 42)")
    migrate.upgrade(engine)
    with psycopg.connect(url, autocommit=True) as connection:
        assert connection.execute("SELECT count(*) FROM simhash.segments").fetchone() == (0,)
        connection.execute(
            "INSERT INTO simhash.segments (document_id, segment, fingerprint) SELECT id, 0, 7 FROM simhash.documents"
        )
        assert connection.execute("SELECT block3 FROM simhash.segments").fetchone() == (7,)
    migrate.downgrade(engine, "0008")
    with psycopg.connect(url, autocommit=True) as connection:
        assert connection.execute("SELECT to_regclass('simhash.segments')").fetchone() == (None,)
        assert connection.execute("SELECT to_regprocedure('simhash.contained(bigint[], integer)')").fetchone() == (
            None,
        )
        assert connection.execute("SELECT key, fingerprint FROM simhash.documents").fetchall() == [("old", 42)]
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.HEAD_REVISION
    engine.dispose()


def test_the_bulk_load_keeps_the_segments_foreign_key(database_url, texts):
    with Store(database_url) as store:
        store.init()
        store.load([document(key, text, with_segments=False) for key, text in texts.items()])
        assert store.count() == len(texts)
    with psycopg.connect(_plain(database_url)) as connection:
        assert connection.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'fk_segments_document_id_documents'"
        ).fetchone() == ("FOREIGN KEY (document_id) REFERENCES simhash.documents(id) ON DELETE CASCADE",)


def _invoke(url, *args: str):
    from typer.testing import CliRunner

    from simhash_store.cli import app

    env = {"SIMHASH_STORE_URL": url.render_as_string(hide_password=False), "COLUMNS": "200"}
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def test_cli_init_segments_add_query_and_dups_containment(database_url, texts, unrelated, tmp_path):
    for key, text in texts.items():
        (tmp_path / f"{key}.txt").write_text(text, encoding="utf-8")
    query = tmp_path / "query"
    query.mkdir()
    (query / "story.txt").write_text(texts["article"], encoding="utf-8")
    (query / "unrelated.txt").write_text(unrelated, encoding="utf-8")

    refused = _invoke(database_url, "query", "--containment", str(query / "story.txt"))
    assert refused.exit_code == 1 and "keeps no segments" in refused.output and "Traceback" not in refused.output

    result = _invoke(database_url, "init", "--segments")
    assert result.exit_code == 0 and "keeping segments" in result.output
    assert (
        _invoke(
            database_url, "add", "-j", "1", "-q", str(tmp_path / "page.txt"), str(tmp_path / "other-law.txt")
        ).exit_code
        == 0
    )
    assert segment_rows(database_url)  # add wrote them

    result = _invoke(
        database_url,
        "query",
        "--containment",
        "--json",
        "-j",
        "1",
        str(query / "story.txt"),
        str(query / "unrelated.txt"),
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["query"], r["key"].rsplit("/", 1)[-1], r["inner"]) for r in records] == [
        (str(query / "story.txt"), "page.txt", "query")
    ]
    assert 0.8 <= records[0]["score"] <= 1

    assert _invoke(database_url, "add", "-j", "1", "-q", str(tmp_path / "article.txt")).exit_code == 0
    result = _invoke(database_url, "dups", "--containment")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].split()[1].endswith("article.txt") and lines[0].split()[3].endswith("page.txt")
    assert "1 pair" in result.stderr


def test_options_containment_does_not_take_are_refused_not_ignored(database_url, texts, tmp_path):
    # dups --containment -o FILE printed its pairs and left FILE as it was (yesterday's pairs, exit 0);
    # query --containment --jsonl FILE or --key KEY looked nothing up, and -k, --limit, --key-field were ignored.
    with Store(database_url) as store:
        store.init(segments=True)
        store.add([document("page", texts["page"]), document("article", texts["article"])])
    (tmp_path / "story.txt").write_text(texts["article"], encoding="utf-8")
    (tmp_path / "in.jsonl").write_text(json.dumps({"key": "s", "text": texts["article"]}) + "\n", encoding="utf-8")
    stale = tmp_path / "pairs.jsonl"
    stale.write_text('{"inner": "yesterday", "outer": "old"}\n', encoding="utf-8")
    story = str(tmp_path / "story.txt")
    for args, option in [
        (["dups", "--containment", "-o", str(stale)], "-o/--output"),
        (["dups", "--containment", "--output-format", "csv"], "--output-format"),
        (["dups", "--containment", "-k", "3"], "-k/--max-distance"),
        (["dups", "--containment", "--clusters"], "--clusters"),
        (["query", "--containment", "--jsonl", str(tmp_path / "in.jsonl")], "--jsonl"),
        (["query", "--containment", "--key", "page"], "--key"),
        (["query", "--containment", story, "-o", str(stale)], "-o/--output"),
        (["query", "--containment", story, "-k", "3"], "-k/--max-distance"),
        (["query", "--containment", story, "--limit", "1"], "--limit"),
        (["query", "--containment", story, "--key-field", "id"], "--key-field"),
    ]:
        result = _invoke(database_url, *args)
        assert result.exit_code == 2, (args, result.output)
        assert f"--containment does not take {option}" in result.output, (args, result.output)
    assert stale.read_text(encoding="utf-8") == '{"inner": "yesterday", "outer": "old"}\n'
    # What it does take still works.
    result = _invoke(database_url, "dups", "--containment", "--json", "--min-score", "0.5")
    assert result.exit_code == 0 and json.loads(result.stdout.splitlines()[0])["inner"] == "article"
