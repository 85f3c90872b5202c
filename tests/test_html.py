"""Web pages in: charset precedence, main-content extraction, WARC archives (no database here)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simhash_store import html
from simhash_store.decoding import DecodeError
from simhash_store.errors import InputError
from simhash_store.html import (
    BOM,
    DETECTED,
    HEADER,
    META,
    NO_MAIN_CONTENT,
    charset_of_header,
    charset_of_meta,
    decode_page,
    extract,
    looks_like_html,
)
from simhash_store.warc import WarcCounts, read_pages

from sample_text import laws  # tests/sample_text.py: the text shipped in tests/data

PAGES = Path(__file__).parent / "data" / "html"
ARTICLE_ZH = "锣鼓经是大陆传统器乐及戏曲里面常用的打击乐记谱方法"
ARTICLE_EN = "The harbour town of Westmere voted on Tuesday to rebuild its old stone pier"


def page(name: str) -> bytes:
    return (PAGES / name).read_bytes()


def test_a_chinese_gbk_news_page_gives_its_article_without_menus_headlines_comments_or_footer():
    extracted = extract(page("zh-news-gbk.html"))
    assert (extracted.charset, extracted.charset_source, extracted.reason) == ("gb18030", META, None)
    assert ARTICLE_ZH in extracted.text
    assert "粤剧吸收了部份京剧的锣鼓" in extracted.text  # the last paragraph too
    for boilerplate in ("首页", "相关阅读", "网友评论", "沙发", "版权所有", "您的位置", "hm.js"):
        assert boilerplate not in extracted.text
    assert extracted.title == "锣鼓经_文化频道_示例新闻网"


def test_an_english_page_gives_its_article_in_paragraphs():
    extracted = extract(page("en-article.html"), "text/html; charset=utf-8")
    assert extracted.charset_source == HEADER
    assert ARTICLE_EN in extracted.text
    assert "coastal path along the harbour wall will stay open." in extracted.text
    for boilerplate in ("Most read", "Ferry timetable", "About time too", "Cookie settings", "gtag"):
        assert boilerplate not in extracted.text
    # paragraphs stay apart, so the last word of one does not run into the first of the next
    assert "arches.\nEngineers" in extracted.text


def test_a_page_of_links_alone_has_no_main_content():
    extracted = extract(page("no-content.html"))
    assert (extracted.text, extracted.reason) == ("", NO_MAIN_CONTENT)


def test_charset_header_over_meta_over_detection():
    article = "<p>" + "中文新闻正文的内容在这里。" * 20 + "</p>"
    says_gbk = f'<html><head><meta charset="gbk"></head><body>{article}</body></html>'
    # the header wins over the meta tag
    assert decode_page(says_gbk.encode("utf-8"), "text/html; charset=UTF-8").source == HEADER
    assert decode_page(says_gbk.encode("big5", "replace"), "text/html; charset=big5").encoding == "big5hkscs"
    # the meta tag wins over detection: these GBK bytes are read as the tag says
    gbk = says_gbk.encode("gbk")
    assert (decode_page(gbk).encoding, decode_page(gbk).source) == ("gb18030", META)
    assert "中文新闻正文" in decode_page(gbk).text
    # no header, no tag: the decoding rules tell GBK from UTF-8
    bare = f"<html><body>{article}</body></html>"
    assert (decode_page(bare.encode("gbk")).encoding, decode_page(bare.encode("gbk")).source) == ("gb18030", DETECTED)
    assert decode_page(bare.encode("utf-8")).encoding == "utf-8"
    # a byte order mark says UTF-8 whatever the tag claims
    assert decode_page(b"\xef\xbb\xbf" + says_gbk.encode("utf-8")).source == BOM


def test_a_declared_charset_that_the_bytes_contradict_is_passed_over():
    utf8_page = (
        '<html><head><meta charset="gbk"></head><body><p>' + "这是用UTF-8保存的页面。" * 30 + "</p></body></html>"
    )
    decoded = decode_page(utf8_page.encode("utf-8"), "text/html; charset=gbk")
    assert (decoded.encoding, decoded.source) == ("utf-8", DETECTED)
    assert "这是用UTF-8保存的页面" in decoded.text


def test_a_latin1_header_gives_way_to_the_pages_own_charset_and_to_utf8():
    # windows-1252 reads any bytes, so a GB2312 page served under a server's default
    # `charset=ISO-8859-1` was read as Latin letters (ÖÐ»ªÈËÃñ), and a UTF-8 one as `Ã©`:
    # its fingerprint was another page's, its copies elsewhere missed.
    article = "<p>" + "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，制定本法。" * 10 + "</p>"
    says_gb2312 = f'<html><head><meta charset="gb2312"><title>t</title></head><body>{article}</body></html>'
    latin = "text/html; charset=ISO-8859-1"
    decoded = decode_page(says_gb2312.encode("gbk"), latin)
    assert (decoded.encoding, decoded.source) == ("gb18030", META) and "惩罚犯罪" in decoded.text
    assert extract(says_gb2312.encode("gbk"), latin).text == extract(says_gb2312.encode("gbk")).text
    bare = f"<html><body>{article}<p>café</p></body></html>"
    assert decode_page(bare.encode("utf-8"), latin).text == bare
    assert decode_page(bare.encode("utf-8"), "text/html; charset=us-ascii").encoding == "utf-8"
    # any charset of one byte a character reads almost any bytes: KOI8-R, windows-1251 alike
    assert decode_page(says_gb2312.encode("gbk"), "text/html; charset=koi8-r").encoding == "gb18030"
    assert decode_page(bare.encode("utf-8"), "text/html; charset=windows-1251").text == bare
    russian = "<html><body><p>Съешь же ещё этих мягких французских булок, да выпей чаю.</p></body></html>"
    for label in ("koi8-r", "windows-1251", "iso-8859-5"):
        assert decode_page(russian.encode(label), f"text/html; charset={label}").text == russian
    # Latin text in windows-1252 stays so, and so does a page whose meta tag fails its bytes.
    french = "<html><body><p>Le café est très bon, déjà vu à Noël.</p></body></html>"
    assert decode_page(french.encode("cp1252"), latin).text == french
    assert (decode_page(french.encode("cp1252"), latin).source) == HEADER
    says_utf8 = french.replace("<body>", '<head><meta charset="utf-8"></head><body>')
    assert decode_page(says_utf8.encode("cp1252"), latin).text == says_utf8


def test_a_chinese_page_under_a_latin1_label_alone_is_read_in_its_own_charset():
    # A GBK or Big5 page naming no charset of its own, served under a server's default
    # `charset=ISO-8859-1` (or saved with a template's <meta charset=iso-8859-1>), was read as
    # windows-1252, which every byte fits: its text Latin letters (ÖÐ»ªÈËÃñ), its copies missed.
    law = laws()[0][:600]
    traditional = "中華人民共和國刑法第一條：為了懲罰犯罪，保護人民，根據憲法，結合我國同犯罪作鬥爭的具體經驗及實際情況，制定本法。"
    for text, charset in ((law, "gbk"), (law, "gb18030"), (traditional * 4, "big5")):
        page = f"<html><head><title>t</title></head><body><p>{text}</p></body></html>"
        for content_type, data in (
            ("text/html; charset=ISO-8859-1", page.encode(charset)),
            (None, page.replace("<title>", '<meta charset="iso-8859-1"><title>').encode(charset)),
        ):
            decoded = decode_page(data, content_type)
            assert (text in decoded.text, decoded.source) == (True, DETECTED), (charset, decoded.encoding)
            assert extract(data, content_type).text == extract(page.encode("utf-8")).text
    # Latin text stays windows-1252, in every language whose letters past ASCII come one at a time or two.
    latin = {
        "fr": "Le café est très bon, déjà vu à Noël. « Ça » dit-il, « où ? » Été, hôtel, forêt, élève.",
        "pt": "A informação das eleições não são ações, são opções. Comunicações, atenção, coração, irmãos.",
        "de": "Über die Brücke gehen Mädchen und Jungen; Größe, Fuß, schön, müde, Bär, Öl, Äpfel.",
        "is": "Þjóðin á Íslandi hefur ætíð átt sér sögu; hæð, bæði, þær, ýmis, æðri, útþrá, ævintýri.",
    }
    for language, text in latin.items():
        page = f"<html><body><p>{text * 8}</p></body></html>"
        decoded = decode_page(page.encode("cp1252"), "text/html; charset=ISO-8859-1")
        assert (decoded.text, decoded.source) == (page, HEADER), language


def test_a_short_latin_page_whose_letters_come_in_pairs_stays_latin():
    # The decoding rules take a short text for GB18030 whatever it reads as: a Portuguese page of a
    # few sentences (ção, ções in pairs) was read as GB18030 (popula玢o, condi珲es), an Estonian one
    # (hää, jää) as h滗, a footer of raw no-break spaces as 牋, under their own ISO-8859-1 label.
    latin = {
        "pt": "A informação sobre a população e as condições de habitação. As eleições, as instituições, "
        "a educação, a produção, a situação, as ações, os corações, as canções, as estações, as nações.",
        "et": "Jäätis on väga hää. Öö oli pime ja jää oli õhuke. Õõnes puu, pööre, vääramatu, jäärapäine, "
        "müüa, tööõhtu, sõõm, nõõ, kõõlus, säästa, pääsuke, hüüe, müüja, püüa.",
        "fi": "PÄÄKAUPUNKISEUDUN SÄÄ TÄNÄÄN: JÄÄTELÖ JA KÄÄRETORTTU, HÄÄT, LÄÄKÄRI, PÄÄ, VÄÄJÄÄMÄTTÄ, "
        "ÄÄNESTÄJÄT PÄÄTTÄVÄT, MÄÄRÄÄ, SÄÄSTÄÄ, JÄÄRÄPÄÄ, TÄÄLLÄ, PÄÄSTÄÄ.",
        "nbsp": "Home\xa0\xa0\xa0\xa0|\xa0\xa0\xa0\xa0About\xa0\xa0\xa0\xa0|\xa0\xa0Contact © 2024\xa0\xa0"
        "All rights reserved\xa0\xa0\xa0\xa0Terms\xa0\xa0\xa0\xa0Privacy",
    }
    for language, text in latin.items():
        for label, content_type in (("", "text/html; charset=ISO-8859-1"), ('<meta charset="windows-1252">', None)):
            page = f"<html><head>{label}<title>t</title></head><body><p>{text}</p></body></html>"
            decoded = decode_page(page.encode("cp1252"), content_type)
            assert (decoded.text, decoded.encoding) == (page, "cp1252"), (language, decoded.encoding)


def test_an_unknown_charset_label_is_ignored_and_an_empty_page_is_said_so():
    assert decode_page("<p>正文内容</p>".encode(), "text/html; charset=no-such-thing").source == DETECTED
    with pytest.raises(DecodeError, match="empty"):
        extract(b"  \n ")


def test_plainly_html():
    assert looks_like_html(b"\xef\xbb\xbf\n<!-- saved -->\n<!DOCTYPE HTML PUBLIC>")
    assert looks_like_html(b"<html lang=zh><head>")
    assert not looks_like_html("正文里提到了<html>标签".encode())
    assert not looks_like_html(b"a <b>bold</b> text")


def _warc(gzipped: bool) -> bytes:
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=gzipped)

    def response(uri: str, content_type: str | None, body: bytes) -> None:
        headers = [("Content-Type", content_type)] if content_type else []
        http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(uri, "response", payload=io.BytesIO(body), http_headers=http))

    writer.write_record(writer.create_warcinfo_record("crawl.warc", {"software": "test"}))
    request = StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.com")], is_http_request=True)
    writer.write_record(writer.create_warc_record("http://example.com/zh", "request", http_headers=request))
    response("http://example.com/zh", "text/html; charset=gbk", page("zh-news-gbk.html"))
    response("http://example.com/logo.png", "image/png", b"\x89PNG\r\n\x1a\n" + bytes(100))
    response("http://example.com/en", None, page("en-article.html"))  # no Content-Type: sniffed
    response("http://example.com/api", "application/json", b'{"a": 1}')
    return buffer.getvalue()


@pytest.mark.parametrize("gzipped", [True, False, "whole"], ids=["warc.gz", "warc", "warc.gz gzipped whole"])
def test_a_warc_gives_its_html_responses_keyed_by_target_uri(gzipped):
    # gzipped whole (one gzip member, not one a record): warcio refused it after its first record
    counts = WarcCounts()
    data = gzip.compress(_warc(False)) if gzipped == "whole" else _warc(bool(gzipped))
    pages = list(read_pages(io.BytesIO(data), counts))
    assert [p.uri for p in pages] == ["http://example.com/zh", "http://example.com/en"]
    assert pages[0].content_type == "text/html; charset=gbk"
    assert ARTICLE_ZH in extract(pages[0].body, pages[0].content_type).text
    assert ARTICLE_EN in extract(pages[1].body, pages[1].content_type).text
    assert (counts.other_records, counts.not_html, counts.by_type) == (2, 2, {"warcinfo": 1, "request": 1})


def test_a_damaged_warc_gives_the_pages_before_the_damage_then_one_error():
    whole = _warc(True)
    cut = whole[: len(whole) - 200]
    found = []
    with pytest.raises(InputError, match="not a readable WARC archive"):
        for warc_page in read_pages(io.BytesIO(cut)):
            found.append(warc_page.uri)
    assert found[:1] == ["http://example.com/zh"]
    whole = gzip.compress(_warc(False))  # gzipped whole, then cut: the record cut short is one failure
    pages = list(read_pages(io.BytesIO(whole[: len(whole) - 200])))
    assert [(p.uri, p.missing > 0) for p in pages] == [
        ("http://example.com/zh", False),
        ("http://example.com/en", True),
    ]
    with pytest.raises(InputError, match="not a readable WARC archive"):
        list(read_pages(io.BytesIO(gzip.compress(b"<html><body>a page saved as .warc.gz</body></html>"))))


def test_a_warc_gz_cut_inside_a_gzip_member_is_damage_not_its_end():
    # Gzipped per record, cut inside a member (a download cut short, the file's last 4 bytes
    # missing, only a member's first 10 bytes): warcio ended quietly there, the records in it lost,
    # exit 0. The pages before it still come out.
    members = [gzip.compress(record) for record in _records(_warc(False))]
    before = [p.uri for p in read_pages(io.BytesIO(b"".join(members[:-1])))]
    assert len(members) >= 2 and before
    for cut in (len(members[-1]) // 2, len(members[-1]) - 4, 10):
        data = b"".join(members[:-1]) + members[-1][:cut]
        found = []
        with pytest.raises(InputError, match="ends inside its gzip"):
            for warc_page in read_pages(io.BytesIO(data)):
                found.append(warc_page.uri)
        assert found == before, cut
    with pytest.raises(InputError, match="ends inside its gzip"):
        list(read_pages(io.BytesIO(members[0][:10])))
    assert [p.uri for p in read_pages(io.BytesIO(b"".join(members)))] == [
        p.uri for p in read_pages(io.BytesIO(_warc(False)))
    ]


def _records(archive: bytes) -> list[bytes]:
    """A plain WARC's records, each with the blank lines after it."""
    starts = [index for index in range(len(archive)) if archive.startswith(b"WARC/1.", index)]
    return [archive[a:b] for a, b in zip(starts, [*starts[1:], len(archive)])]


# ------------------------------------------------------------ through the command line


def _cli(url, *args: str):
    from typer.testing import CliRunner

    from simhash_store.cli import app

    env = {"SIMHASH_STORE_URL": url.render_as_string(hide_password=False)}
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def test_add_fingerprint_and_query_take_pages_and_warc_archives(database_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("zh-news-gbk.html", "en-article.html", "no-content.html"):
        (tmp_path / name).write_bytes(page(name))
    (tmp_path / "crawl.warc.gz").write_bytes(_warc(True))
    # the page's fingerprint is its article's: the same as the article's text alone
    printed = _cli(database_url, "fingerprint", "zh-news-gbk.html", "en-article.html")
    assert printed.exit_code == 0, printed.output
    (tmp_path / "article.txt").write_text(extract(page("zh-news-gbk.html")).text, "utf-8")
    alone = _cli(database_url, "fingerprint", "article.txt")
    assert printed.stdout.split()[0] == alone.stdout.split()[0]
    added = _cli(database_url, "add", "crawl.warc.gz")
    assert added.exit_code == 0, added.output
    assert "added 2" in added.output
    found = _cli(database_url, "query", "--json", "zh-news-gbk.html")
    assert found.exit_code == 0, found.output
    answer = json.loads(found.stdout.splitlines()[0])
    assert answer["matches"][0] == {"key": "http://example.com/zh", "distance": 0, "similarity": 1.0}
    # a page with no main content is said so under its own reason; the other file is stored
    added = _cli(database_url, "add", "no-content.html", "en-article.html")
    assert "skipped 1: no main content" in added.output
    assert "added 1" in added.output


def test_dedup_of_records_whose_field_holds_html(database_url, tmp_path):
    english = page("en-article.html").decode()
    rewrapped = english.replace("Most read", "Popular now").replace("About time too.", "Lovely.")
    lines = [
        {"key": "zh", "html": page("zh-news-gbk.html").decode("gbk")},
        {"key": "en", "html": english},
        {"key": "en-other-template", "html": rewrapped},
        {"key": "menu", "html": page("no-content.html").decode()},
    ]
    source = tmp_path / "pages.jsonl"
    source.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8")
    result = _cli(database_url, "dedup", str(source), "--html-field", "html", "-o", str(tmp_path / "kept.jsonl"))
    assert result.exit_code == 0, result.output
    kept = [json.loads(line)["key"] for line in (tmp_path / "kept.jsonl").read_text("utf-8").splitlines()]
    assert kept == ["zh", "en", "menu"]
    assert "no main content" in result.output


# ------------------------------------------------------------ through the format registry


def test_pages_and_crawls_are_registered_input_formats(tmp_path):
    from simhash_store.formats import ReadOptions, read_documents, read_records, resolve_format

    assert [resolve_format(name).name for name in ("a.html", "b.HTM", "c.warc", "d.warc.gz")] == [
        "html",
        "html",
        "warc",
        "warc",
    ]
    (tmp_path / "saved").write_bytes(b"<!DOCTYPE html>" + page("en-article.html"))
    (tmp_path / "crawl").write_bytes(_warc(False))
    assert resolve_format(str(tmp_path / "saved")).name == "html"  # sniffed: the name says nothing
    assert resolve_format(str(tmp_path / "crawl")).name == "warc"
    (tmp_path / "crawl.warc.gz").write_bytes(_warc(True))
    options = ReadOptions(key_field="url", text_field="body", prefix="web/")
    rows = list(read_records(str(tmp_path / "crawl.warc.gz"), options=options))
    assert [record["url"] for _, record in rows] == ["http://example.com/zh", "http://example.com/en"]
    # the prefix goes before each key once, when records become documents (add, query)
    documents = list(read_documents([str(tmp_path / "crawl.warc.gz")], options=options))
    assert [document.key for document in documents] == ["web/http://example.com/zh", "web/http://example.com/en"]
    assert ARTICLE_ZH in rows[0][1]["body"] and "<" not in rows[0][1]["body"]
    assert rows[1][0] == f"{tmp_path / 'crawl.warc.gz'}: http://example.com/en"
    (tmp_path / "menu.html").write_bytes(page("no-content.html"))
    [(where, skipped)] = read_records(str(tmp_path / "menu.html"))
    assert (where, skipped.reason) == (str(tmp_path / "menu.html"), "no main content")


def test_a_damaged_crawl_through_the_registry_gives_its_pages_then_one_skip(tmp_path):
    from simhash_store.corpus import Skip
    from simhash_store.formats import read_records

    whole = _warc(True)
    (tmp_path / "cut.warc.gz").write_bytes(whole[: len(whole) - 200])
    rows = list(read_records(str(tmp_path / "cut.warc.gz")))
    assert rows[0][1]["key"] == "http://example.com/zh"
    assert isinstance(rows[-1][1], Skip) and "not a readable WARC archive" in str(rows[-1][1])


def _raw_response(uri: str, body: bytes, declared: int | None = None, encoding: str | None = None) -> bytes:
    """One WARC response written by hand, so that its Content-Length can lie (``declared``);
    ``encoding``: its HTTP Content-Encoding (the body given already encoded)."""
    coded = b"" if encoding is None else f"Content-Encoding: {encoding}\r\n".encode()
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n" + coded + b"\r\n"
    length = len(http) + len(body) if declared is None else declared
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Record-ID: <urn:uuid:{uri}>\r\n"
        f"WARC-Date: 2020-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()
    return head + http + body + b"\r\n\r\n"


def test_a_body_whose_content_encoding_cannot_be_undone_is_a_failed_page_not_a_binary_or_partial_one(tmp_path, capfd):
    import random

    from simhash_store.corpus import UNREADABLE, Skip
    from simhash_store.formats import read_records

    zh = page("zh-news-gbk.html").decode("gbk").encode()
    noise = random.Random(7).randbytes(400_000)  # a body of more than warcio's first block when gzipped
    long_page = b"<html><body><p>" + noise.hex().encode() + b"</p></body></html>"
    packed = gzip.compress(long_page)
    damaged = bytearray(packed)
    damaged[len(packed) // 2 : len(packed) // 2 + 64] = bytes(64)
    archive = b"".join(
        (
            _raw_response("http://e/plain", zh),
            # brotli (without the brotli module) and zstd were passed through still compressed
            # and counted as binary, a deliberate skip with exit 0
            _raw_response("http://e/br", random.Random(1).randbytes(900), encoding="br"),
            _raw_response("http://e/zstd", b"\x28\xb5\x2f\xfd" + random.Random(2).randbytes(900), encoding="zstd"),
            # damaged past warcio's first block: its error went raw to stderr, the page cut there
            _raw_response("http://e/damaged", bytes(damaged), encoding="gzip"),
            # cut short: half a page stored as the page, silently
            _raw_response("http://e/cut", packed[: len(packed) // 2], encoding="gzip"),
            _raw_response("http://e/gzip", gzip.compress(zh), encoding="gzip"),
            _raw_response("http://e/stored-decoded", zh, encoding="gzip"),  # some crawlers keep the header
        )
    )
    (tmp_path / "codings.warc").write_bytes(archive)
    rows = {where.split(": ", 1)[1]: record for where, record in read_records(str(tmp_path / "codings.warc"))}
    failed = {uri: str(record) for uri, record in rows.items() if isinstance(record, Skip)}
    assert set(failed) == {"http://e/br", "http://e/zstd", "http://e/damaged", "http://e/cut"}
    assert all(record.reason == UNREADABLE for record in rows.values() if isinstance(record, Skip))
    assert "'br' is not one this reads" in failed["http://e/br"] and "damaged" in failed["http://e/damaged"]
    assert "cut short" in failed["http://e/cut"]
    texts = {uri: record["text"] for uri, record in rows.items() if isinstance(record, dict)}
    assert texts["http://e/plain"] == texts["http://e/gzip"] == texts["http://e/stored-decoded"] != ""
    assert capfd.readouterr().err == ""  # nothing of warcio's on stderr


def test_a_warc_header_line_over_the_bound_is_damage_not_a_read_of_any_length(tmp_path):
    # warcio reads a header line whole: one of 150 MB in a .warc.gz of 153 KB took 615 MB, and the
    # bound on a record's body did not apply to it. A WARC header, an HTTP header or the blank lines
    # between records longer than MAX_HEADER_LINE now end the archive as damage, in one line.
    from simhash_store.corpus import UNREADABLE, Skip
    from simhash_store.formats import ReadOptions, read_records
    from simhash_store.warc import MAX_HEADER_LINE

    zh = page("zh-news-gbk.html").decode("gbk").encode()
    huge = b"A" * (MAX_HEADER_LINE + 10)
    good = _raw_response("http://e/u1", zh)
    second = _raw_response("http://e/u2", zh)
    with_http_line = second.replace(b"charset=utf-8\r\n", b"charset=utf-8\r\nX-Long: " + huge + b"\r\n")
    declared = len(second.split(b"\r\n\r\n", 1)[1]) - 4  # the HTTP block, without the record's end
    cases = {
        "warc-header": second.replace(b"WARC-Type: response\r\n", b"WARC-Type: response\r\nX-Long: " + huge + b"\r\n"),
        "http-header": with_http_line.replace(
            f"Content-Length: {declared}".encode(), f"Content-Length: {declared + len(huge) + 10}".encode()
        ),
        "between-records": huge + b"\r\n" + second,
    }
    for name, bad in cases.items():
        for suffix, data in ((".warc", good + bad), (".warc.gz", gzip.compress(good) + gzip.compress(bad))):
            (tmp_path / (name + suffix)).write_bytes(data)
            read = [
                record["key"] if isinstance(record, dict) else record
                for _, record in read_records(str(tmp_path / (name + suffix)), options=ReadOptions())
            ]
            assert read[0] == "http://e/u1" and len(read) == 2, (name, suffix, read)
            assert isinstance(read[1], Skip) and read[1].reason == UNREADABLE, (name, suffix, read)
            assert f"a header line longer than {MAX_HEADER_LINE:,} bytes" in str(read[1])


def test_a_warc_record_whose_length_lies_or_whose_body_is_over_the_bound_costs_itself_in_one_line(tmp_path, capfd):
    from simhash_store.corpus import TOO_LARGE, UNREADABLE, Skip
    from simhash_store.formats import ReadOptions, read_records

    zh, en = page("zh-news-gbk.html").decode("gbk").encode(), page("en-article.html")

    def rows(name: str, data: bytes, **options) -> list:
        (tmp_path / name).write_bytes(data)
        return [
            record["key"] if isinstance(record, dict) else record
            for _, record in read_records(str(tmp_path / name), options=ReadOptions(**options))
        ]

    # A Content-Length past the end of the archive took in the records after it, silently (exit 0,
    # the next page's bytes fingerprinted as part of this one); now the record is one bad record.
    first, last = _raw_response("http://e/u1", zh), _raw_response("http://e/u3", en)
    plain = rows("long.warc", first + _raw_response("http://e/u2", en, declared=10**8) + last)
    assert plain[0] == "http://e/u1" and len(plain) == 2
    assert (
        isinstance(plain[1], Skip) and plain[1].reason == UNREADABLE and "short of its Content-Length" in str(plain[1])
    )
    # Gzipped per record, the records after it are still read.
    members = b"".join(
        gzip.compress(r)
        for r in (
            _raw_response("http://e/u1", zh),
            _raw_response("http://e/u2", en, declared=10**8),
            _raw_response("http://e/u3", en),
        )
    )
    zipped = rows("long.warc.gz", members)
    assert zipped[0] == "http://e/u1" and zipped[2] == "http://e/u3" and isinstance(zipped[1], Skip)
    # An archive cut in its last record gave a partial page.
    whole = _raw_response("http://e/u1", zh) + _raw_response("http://e/u2", en)
    cut = rows("cut.warc", whole[:-300])
    assert cut[0] == "http://e/u1" and isinstance(cut[1], Skip) and "short of its Content-Length" in str(cut[1])
    # A Content-Length too short: warcio printed a warning of three lines to stderr; now only the one line.
    capfd.readouterr()
    short = rows("short.warc", first + _raw_response("http://e/u2", en, declared=10) + last)
    assert short[0] == "http://e/u1" and isinstance(short[-1], Skip) and "Content-Length looks wrong" in str(short[-1])
    assert capfd.readouterr().err == ""
    # A body over the bound (a small .warc.gz can inflate to gigabytes) is not read beyond it.
    bomb = gzip.compress(_raw_response("http://e/big", b"<html><body><p>" + b"a " * 500_000 + b"</p></body></html>"))
    assert len(bomb) < 10_000
    bounded = rows("bomb.warc.gz", gzip.compress(_raw_response("http://e/u1", zh)) + bomb, max_bytes=100_000)
    assert bounded[0] == "http://e/u1" and isinstance(bounded[1], Skip) and bounded[1].reason == TOO_LARGE


def test_a_warc_body_that_inflates_without_end_costs_the_page_bound_not_max_file_size(tmp_path):
    # gzip inside gzip: a .warc.gz of a few kilobytes whose one body inflates to 1 GB took 2.2 GB of
    # memory before its `too large` line, under the default --max-file-size (1G). A page is now read
    # up to MAX_PAGE_BYTES whatever --max-file-size says, in pieces (no second copy to join them).
    import tracemalloc
    import zlib

    from simhash_store.corpus import TOO_LARGE, Skip
    from simhash_store.formats import ReadOptions, read_records
    from simhash_store.warc import MAX_PAGE_BYTES

    inflated = 3 * MAX_PAGE_BYTES
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing, fed in pieces
    zero = bytes(1 << 20)
    body = packer.compress(b"<html><body><p>") + b"".join(packer.compress(zero) for _ in range(inflated >> 20))
    body += packer.flush()
    bomb = gzip.compress(_raw_response("http://e/bomb", body, encoding="gzip"))
    zh = page("zh-news-gbk.html").decode("gbk").encode()
    archive = tmp_path / "bomb.warc.gz"
    archive.write_bytes(bomb + gzip.compress(_raw_response("http://e/u1", zh)))
    assert archive.stat().st_size < 1_000_000
    tracemalloc.start()
    try:
        got = [record for _, record in read_records(str(archive), options=ReadOptions(max_bytes=1 << 30))]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(got[0], Skip) and got[0].reason == TOO_LARGE and "WARC page" in str(got[0])
    assert got[1]["key"] == "http://e/u1"  # the bad record cost only itself
    # The bound, plus warcio's buffers (a 16 KB compressed block inflates to 16 MB, per layer): 115 MB.
    assert peak < 2 * MAX_PAGE_BYTES, f"{peak:,} bytes at the peak"
    # A lower --max-file-size still lowers it, and says how to raise it.
    lower = [record for _, record in read_records(str(archive), options=ReadOptions(max_bytes=1 << 20))]
    assert isinstance(lower[0], Skip) and "--max-file-size" in str(lower[0])


def test_html_field_in_add_query_and_calibrate(database_url, tmp_path):
    lines = [
        {"url": "zh", "page": page("zh-news-gbk.html").decode("gbk")},
        {"url": "en", "page": page("en-article.html").decode()},
    ]
    source = tmp_path / "pages.jsonl"
    source.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8")
    added = _cli(database_url, "add", str(source), "--key-field", "url", "--html-field", "page")
    assert added.exit_code == 0, added.output
    assert "added 2" in added.output
    (tmp_path / "article.txt").write_text(extract(page("zh-news-gbk.html")).text, "utf-8")
    found = _cli(database_url, "query", "--json", str(tmp_path / "article.txt"))
    assert json.loads(found.stdout.splitlines()[0])["matches"][0]["key"] == "zh"
    asked = _cli(database_url, "query", "--json", str(source), "--html-field", "page")
    assert asked.exit_code == 0, asked.output
    answers = [json.loads(line) for line in asked.stdout.splitlines()]
    assert [answer["matches"][0]["distance"] for answer in answers] == [0, 0]
    missing = _cli(database_url, "add", str(source), "--key-field", "url", "--html-field", "html")
    assert missing.exit_code == 1
    assert "html" in missing.output and "Traceback" not in missing.output


def test_dedup_reads_a_crawl(database_url, tmp_path):
    (tmp_path / "crawl.warc.gz").write_bytes(_warc(True))
    result = _cli(database_url, "dedup", str(tmp_path / "crawl.warc.gz"), "-o", str(tmp_path / "kept.jsonl"))
    assert result.exit_code == 0, result.output
    kept = [json.loads(line) for line in (tmp_path / "kept.jsonl").read_text("utf-8").splitlines()]
    assert [record["key"] for record in kept] == ["http://example.com/zh", "http://example.com/en"]
    assert ARTICLE_EN in kept[1]["text"]


@pytest.mark.parametrize("uri", ["", "ftp://example.com/zh", "urn:example:zh"])
def test_a_warc_response_under_another_or_no_target_uri_is_read_as_any(uri):
    # warcio parses the HTTP head only under http: and https:; the page was dropped silently.
    body = page("zh-news-gbk.html")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=gbk\r\n\r\n"
    raw = _raw_response(uri, body, declared=len(head) + len(body)).replace(b"charset=utf-8", b"charset=gbk")
    pages = list(read_pages(io.BytesIO(raw + _raw_response("http://example.com/en", page("en-article.html")))))
    assert [p.uri for p in pages] == [uri, "http://example.com/en"]
    assert pages[0].content_type == "text/html; charset=gbk" and pages[0].body == body
    assert ARTICLE_ZH in extract(pages[0].body, pages[0].content_type).text


def test_a_record_holding_a_pages_exact_bytes_does_not_pass_for_the_page_on_a_rerun(database_url, tmp_path):
    # A file's digest covers its bytes, a record's its text: one record whose text is exactly the
    # page's markup made the next add of the page say "unchanged" and keep the markup's fingerprint.
    from simhash_store.store import Store

    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "a.html").write_bytes(page("en-article.html"))
    record = {"key": "a.html", "text": page("en-article.html").decode("utf-8")}
    (tmp_path / "in.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert _cli(database_url, "add", "--jsonl", str(tmp_path / "in.jsonl")).exit_code == 0
    added = _cli(database_url, "add", str(pages))
    assert added.exit_code == 0, added.output
    assert "unchanged 0" in added.output and "updated 1" in added.output, added.output
    printed = _cli(database_url, "fingerprint", str(pages / "a.html"))
    with Store(database_url) as store:
        assert f"{store.get('a.html').fingerprint:016x}" == printed.stdout.split()[0]


def test_warc_header_lines_each_under_the_bound_stop_at_a_total_bound(tmp_path):
    # Each header line under MAX_HEADER_LINE, a thousand of them in one header: a .warc.gz of 1 MB
    # took 1.1 GB (warcio keeps every line). Lines in a row now stop at MAX_HEADER_BYTES, as damage
    # in one line; records without a body, each with long headers, still read one after another.
    from simhash_store.corpus import UNREADABLE, Skip
    from simhash_store.formats import ReadOptions, read_records
    from simhash_store.warc import MAX_HEADER_LINE

    zh = page("zh-news-gbk.html").decode("gbk").encode()
    long_line = b"X-Long: " + b"A" * (MAX_HEADER_LINE - 100) + b"\r\n"
    many = long_line * 9  # 9 MiB, past MAX_HEADER_BYTES (8 MiB)
    good, second = _raw_response("http://e/u1", zh), _raw_response("http://e/u2", zh)
    declared = len(second.split(b"\r\n\r\n", 1)[1]) - 4
    with_http_lines = second.replace(b"charset=utf-8\r\n", b"charset=utf-8\r\n" + many)
    cases = {
        "warc-header": second.replace(b"WARC-Type: response\r\n", b"WARC-Type: response\r\n" + many),
        "http-header": with_http_lines.replace(
            f"Content-Length: {declared}".encode(), f"Content-Length: {declared + len(many)}".encode()
        ),
    }
    for name, bad in cases.items():
        (tmp_path / f"{name}.warc.gz").write_bytes(gzip.compress(good) + gzip.compress(bad))
        read = [
            record["key"] if isinstance(record, dict) else record
            for _, record in read_records(str(tmp_path / f"{name}.warc.gz"), options=ReadOptions())
        ]
        assert read[0] == "http://e/u1" and len(read) == 2, (name, read)
        assert isinstance(read[1], Skip) and read[1].reason == UNREADABLE, (name, read)
        assert "header lines of more than 8,388,608 bytes in a row" in str(read[1])
    bodiless = (
        b"WARC/1.0\r\nWARC-Type: metadata\r\nWARC-Record-ID: <urn:uuid:m>\r\n"
        + long_line
        + b"Content-Length: 0\r\n\r\n\r\n"
    )
    (tmp_path / "bodiless.warc.gz").write_bytes(gzip.compress(bodiless) * 10 + gzip.compress(good))
    read = [record for _, record in read_records(str(tmp_path / "bodiless.warc.gz"), options=ReadOptions())]
    assert [record["key"] for record in read] == ["http://e/u1"]


def test_a_page_the_bound_leaves_empty_is_one_line_without_readabilitys_traceback(tmp_path):
    # A page of only a comment, a doctype or end tags is nothing once the bound drops them:
    # readability logged "error getting summary" with a traceback, which Python printed to stderr
    # (no logging configured), before the page's own one line.
    import subprocess
    import sys

    for name, content in (
        ("comment", "<!-- only a comment -->"),
        ("doctype", "<!DOCTYPE html>\n"),
        ("ends", "</div></p>"),
    ):
        (tmp_path / f"{name}.html").write_text(content, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "simhash_store.cli", "fingerprint", str(tmp_path / f"{name}.html")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        assert done.stderr == f"failed: {tmp_path / name}.html: no main content\n", done.stderr


# ------------------------------------------------------------ hostile pages


NOT_CHARSETS = ["zlib", "base64", "hex", "rot13", "uu", "quopri", "undefined", "punycode"]


@pytest.mark.parametrize("label", NOT_CHARSETS)
def test_a_charset_naming_no_text_encoding_is_passed_over_not_a_crash(label):
    # `<meta charset=zlib>` (any Python codec of bytes to bytes, `undefined`, punycode on bad
    # input) ended add, query and fingerprint with a traceback, nothing of the run stored;
    # punycode on valid input decoded in quadratic time (320 KB: 35 s).
    english = page("en-article.html").decode()
    declared = english.replace("<head>", f'<head><meta charset="{label}">', 1)
    assert f'charset="{label}"' in declared
    got = decode_page(declared.encode())
    assert got.source == DETECTED and got.encoding != label
    header = _raw_response("http://e/x", english.encode()).replace(b"charset=utf-8", f"charset={label}".encode())
    pages = list(read_pages(io.BytesIO(header)))
    assert ARTICLE_EN in extract(pages[0].body, pages[0].content_type).text


@pytest.mark.parametrize("label", ["cp037", "IBM500", "cp1140", "cp273", "utf-7"])
def test_a_charset_that_reads_markup_as_other_characters_is_passed_over(label):
    # EBCDIC reads every byte, so `<meta charset=cp037>` on a UTF-8 page was taken at its word:
    # the page's text became other characters throughout (`\x14\x07ÈÑÈ%Á`), fingerprinted as such,
    # its copies missed; utf-7 reads `+` as the start of base64. No browser reads either.
    zh = page("zh-news-gbk.html").decode("gbk")
    declared = zh.replace('charset="gbk"', f'charset="{label}"').replace("charset=gbk", f"charset={label}")
    assert label in declared
    got = decode_page(declared.encode("utf-8"))
    assert (got.source, got.encoding) == (DETECTED, "utf-8")
    by_header = decode_page(declared.encode("utf-8"), f"text/html; charset={label}")
    assert (by_header.source, by_header.encoding) == (DETECTED, "utf-8")
    assert ARTICLE_ZH in extract(declared.encode("utf-8"), f"text/html; charset={label}").text


def test_add_of_pages_declaring_no_text_encoding_stores_them_and_the_rest(database_url, tmp_path):
    english = page("en-article.html").decode()
    folder = tmp_path / "pages"
    folder.mkdir()
    for label in NOT_CHARSETS:
        declared = english.replace("<head>", f'<head><meta charset="{label}">', 1).replace("Westmere", label)
        (folder / f"{label}.html").write_text(declared, "utf-8")
    (folder / "note.txt").write_text(ARTICLE_EN, "utf-8")
    added = _cli(database_url, "add", str(folder))
    assert added.exit_code == 0, added.output
    assert f"added {len(NOT_CHARSETS) + 1}," in added.output
    printed = _cli(database_url, "fingerprint", str(folder / "zlib.html"))
    assert printed.exit_code == 0, printed.output


def test_sniffing_a_page_behind_many_comments_is_one_pass():
    # `<!---->` repeated under a pattern that repeated comments backtracked over every grouping:
    # 197 bytes took 145 s in add, 40 comments would have taken days.
    assert not looks_like_html(b"<!---->" * 40 + b"x")
    assert looks_like_html(b"\xef\xbb\xbf" + b" <!-- a -->\n<!---->" * 3 + b"<!DOCTYPE html><p>")
    assert looks_like_html(b"<!-- x --> <html lang=zh>") and not looks_like_html(b"<!-- never closed <html>")


def test_warc_types_are_counted_by_name_up_to_a_bound():
    # Each record's own WARC-Type of about a megabyte was kept by name: 1.3 GB for a 1.3 MB archive.
    from simhash_store.warc import MAX_TYPES

    def record(kind: str) -> bytes:
        return gzip.compress(
            f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{kind[:8]}>\r\n"
            "WARC-Date: 2020-01-01T00:00:00Z\r\nContent-Length: 0\r\n\r\n\r\n\r\n".encode()
        )

    counts = WarcCounts()
    archive = b"".join(record(f"{i:04d}" + "t" * 10_000) for i in range(MAX_TYPES * 3))
    assert list(read_pages(io.BytesIO(archive), counts)) == []
    assert counts.other_records == MAX_TYPES * 3
    assert len(counts.by_type) == MAX_TYPES + 1 and counts.by_type["other"] == MAX_TYPES * 2
    assert max(len(kind) for kind in counts.by_type) <= 64


def test_dedup_of_a_directory_reads_its_pages_for_their_main_content(database_url, tmp_path):
    # add took a page found in a directory for its main content; dedup kept its raw markup.
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "zh.html").write_bytes(page("zh-news-gbk.html"))
    (folder / "en.html").write_bytes(page("en-article.html"))
    result = _cli(database_url, "dedup", str(folder), "-o", str(tmp_path / "kept.jsonl"))
    assert result.exit_code == 0, result.output
    kept = {r["key"]: r["text"] for r in map(json.loads, (tmp_path / "kept.jsonl").read_text("utf-8").splitlines())}
    assert kept["en.html"] == extract(page("en-article.html")).text and "<" not in kept["en.html"]
    assert ARTICLE_ZH in kept["zh.html"] and "<div" not in kept["zh.html"]


def test_records_passed_over_inflate_to_the_archives_bound_too(tmp_path):
    # A record that is no page (metadata here), or a page past its bound, is still inflated to its
    # end to reach the next record: a 1 MB .warc.gz holding a metadata record of 1 GB of zeros took
    # 66 s, 4 MB 148 s, and the inflation budget (pages only) never saw those bytes. Now everything
    # read from the archive's gzip counts; past the budget the archive is not read on.
    import zlib

    from simhash_store.corpus import TOO_LARGE, Skip
    from simhash_store.formats import ReadOptions, read_records
    from simhash_store.warc import INFLATION_RATIO, MAX_PAGE_BYTES, ArchiveInflationError

    zeros = 200 << 20
    head = (
        "WARC/1.0\r\nWARC-Type: metadata\r\nWARC-Target-URI: http://e/meta\r\nWARC-Record-ID: <urn:uuid:m>\r\n"
        f"Content-Type: application/octet-stream\r\nContent-Length: {zeros}\r\n\r\n"
    ).encode()
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    bomb = packer.compress(head) + b"".join(packer.compress(block) for _ in range(zeros >> 20))
    bomb += packer.compress(b"\r\n\r\n") + packer.flush()
    zh = page("zh-news-gbk.html").decode("gbk").encode()
    archive = tmp_path / "bomb.warc.gz"
    archive.write_bytes(
        gzip.compress(_raw_response("http://e/before", zh)) + bomb + gzip.compress(_raw_response("http://e/after", zh))
    )
    size = archive.stat().st_size
    assert zeros > INFLATION_RATIO * size + MAX_PAGE_BYTES  # the record alone is past the budget
    pages = []
    with archive.open("rb") as stream, pytest.raises(ArchiveInflationError, match="inflates past"):
        for found in read_pages(stream):
            pages.append(found)
    assert [p.uri for p in pages] == ["http://e/before"] and pages[0].body
    records = [record for _, record in read_records(str(archive), options=ReadOptions())]
    assert isinstance(records[0], dict) and records[0]["key"] == "http://e/before"
    assert len(records) == 2 and isinstance(records[1], Skip) and records[1].reason == TOO_LARGE
    assert f"inflates past {INFLATION_RATIO} times its size" in str(records[1])


def test_the_pages_of_an_archive_inflate_to_a_bound_tied_to_its_size(tmp_path):
    # A body gzipped inside its record's gzip made 500 bytes of archive into 8.9 MB of page (33 s
    # to extract), once per record: every record of a small archive could cost a page's bound.
    import zlib

    from simhash_store.corpus import TOO_LARGE, Skip
    from simhash_store.formats import ReadOptions, read_records
    from simhash_store.warc import INFLATION_RATIO, MAX_PAGE_BYTES

    def inflating(uri: str, megabytes: int) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        spaces = b" " * (1 << 20)
        body = packer.compress(b"<html><body><p>") + b"".join(packer.compress(spaces) for _ in range(megabytes))
        return gzip.compress(_raw_response(uri, body + packer.flush(), encoding="gzip"))

    archive = tmp_path / "small.warc.gz"
    archive.write_bytes(b"".join(inflating(f"http://e/{i}", 30) for i in range(3)))
    size = archive.stat().st_size
    assert size * INFLATION_RATIO < MAX_PAGE_BYTES  # the bound is about one page's here
    with archive.open("rb") as stream:
        pages = list(read_pages(stream))
    assert [len(p.body) > 0 for p in pages] == [True, True, False]
    assert pages[2].too_large and pages[2].over_budget
    # The same through a pipe (a stream of no known size), which had no bound: the budget
    # follows the bytes read, and pages past it are not decompressed at all.
    piped = list(read_pages(io.BufferedReader(io.BytesIO(archive.read_bytes() * 10))))  # type: ignore[arg-type]
    assert len(piped) == 30 and sum(len(p.body) > 0 for p in piped) < 30 and piped[-1].over_budget
    records = [record for _, record in read_records(str(archive), options=ReadOptions())]
    assert isinstance(records[2], Skip) and records[2].reason == TOO_LARGE
    assert f"inflate past {INFLATION_RATIO} times its size" in str(records[2])


_PIECES = [
    b"<meta",
    b"<META ",
    b">",
    b"charset",
    b"CharSet = ",
    b'"',
    b"'",
    b" ",
    b" \t\n" * 5,
    b"gbk",
    b"utf-8",
    b"x",
    b"\xb1",
]


@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_the_meta_charset_is_found_tag_by_tag_as_one_pattern_over_the_window_found_it(pieces):
    # The lookup searches each <meta up to its own ">" (one lazy pattern over the whole window
    # was quadratic in unclosed tags); whatever the bytes, it names what that pattern named.
    import re

    whole = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
    data = b"".join(pieces)
    found = whole.search(data)
    expected = html._codec(found.group(1).decode("ascii", "replace")) if found else None
    assert charset_of_meta(data) == expected


def test_a_charset_after_thousands_of_unclosed_meta_tags_is_found():
    # Thousands of "<meta" without an end (they cost 2.7 s a page when each was searched to the
    # window's end): a closed tag after them in the window is still found, and none is made up.
    page = b"<meta x" * 2000 + b"<meta charset=gbk>"
    assert charset_of_meta(page) == html._codec("gbk")
    assert charset_of_meta(b"<meta name=a charset" * 3000) is None


def test_a_charset_of_thousands_of_spaces_is_read_in_one_pass():
    # "charset=" then 16,000 spaces and no name: the spaces around an optional quote were one run
    # split every way between two \s* (quadratic: 7-14 s for one page's <meta>). Now one pass each;
    # the names found with spaces and quotes around them are the same.
    spaces = " " * 16000
    assert charset_of_meta(b"<meta charset=" + spaces.encode() + b">") is None
    assert charset_of_meta(b"<meta charset=" + spaces.encode() + b"gbk>") == html._codec("gbk")
    assert charset_of_meta(b"<meta content='text/html; charset= ' gbk'>") == html._codec("gbk")
    assert charset_of_header("text/html; charset=" + spaces) is None
    assert charset_of_header("text/html; charset=" + spaces + '"' + spaces + "GB2312") == "gb18030"


def test_a_warc_record_without_a_target_uri_costs_itself_and_warcios_warning_stays_off_the_terminal(tmp_path, capfd):
    # A response without WARC-Target-URI was an AttributeError inside warcio's parser: the archive
    # counted as damaged there and every record after it was lost. A URI holding a space made warcio
    # log a warning holding the URI raw, escape sequences and all, on stderr (hostile/warc_uris.py).
    from simhash_store.corpus import Skip
    from simhash_store.formats import read_records

    zh = page("zh-news-gbk.html").decode("gbk").encode()
    without_uri = _raw_response("http://e/gone", zh).replace(b"WARC-Target-URI: http://e/gone\r\n", b"")
    archive = b"".join(
        (
            _raw_response("http://e/u1", zh),
            without_uri,
            _raw_response("http://e/a b\x1b]0;retitled\x07", zh),
            _raw_response("http://e/u3", zh),
        )
    )
    (tmp_path / "uris.warc").write_bytes(archive)
    rows = list(read_records(str(tmp_path / "uris.warc")))
    assert not any(isinstance(record, Skip) for _, record in rows), rows
    assert [record["key"] for _, record in rows] == [
        "http://e/u1",
        "",  # no key: a bad record of its own where the key is taken
        "http://e/a%20b\x1b]0;retitled\x07",  # as warcio reads it; printed escaped where a message names it
        "http://e/u3",
    ]
    assert capfd.readouterr().err == ""


def test_a_warc_response_of_an_error_status_is_not_the_page_at_its_uri(tmp_path):
    # A recrawl in which a page answered 503 replaced the page's stored fingerprint with the error
    # page's, exit 0 (hostile/warc_error_status.py): a 404, a 500, a redirect's body or a part of the
    # page (206) is not the page at that URI. They are passed over as responses that are not HTML are.
    from simhash_store.formats import read_records

    zh = page("zh-news-gbk.html").decode("gbk").encode()
    statuses = {"ok": b"200 OK", "gone": b"404 Not Found", "busy": b"503 Service Unavailable"}
    statuses |= {"moved": b"301 Moved Permanently", "part": b"206 Partial Content", "made": b"201 Created"}
    head = b"\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
    archive = b"".join(
        _raw_response(f"http://e/{name}", zh, declared=len(b"HTTP/1.1 " + status + head) + len(zh)).replace(
            b"HTTP/1.1 200 OK", b"HTTP/1.1 " + status
        )
        for name, status in statuses.items()
    )
    (tmp_path / "statuses.warc").write_bytes(archive)
    assert [record["key"] for _, record in read_records(str(tmp_path / "statuses.warc"))] == [
        "http://e/ok",
        "http://e/made",
    ]
