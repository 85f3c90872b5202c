"""What a page may cost the HTML parser: attributes a tag and tags a page are bounded before lxml
parses it, however the page hides its tags (parsed by the real lxml here, no database)."""

from __future__ import annotations

from pathlib import Path

import lxml.html
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from simhash_store.corpus import TOO_LARGE
from simhash_store.decoding import DecodeError
from simhash_store.html import extract
from simhash_store.html_limits import MAX_ATTRIBUTES, MAX_DEPTH, MAX_ELEMENTS, bounded

PAGES = Path(__file__).parent / "data" / "html"
ARTICLE = "<p>" + "The harbour town of Westmere voted on Tuesday to rebuild its old stone pier. " * 20 + "</p>"


def _attributes(count: int, *, values: bool = False) -> str:
    return " ".join(f'a{i}="v<>"' if values and i % 3 == 0 else f"a{i}" for i in range(count))


def _most_attributes(page: str) -> int:
    tree = lxml.html.document_fromstring(page)
    return max((len(element.attrib) for element in tree.iter() if isinstance(element.tag, str)), default=0)


def test_ordinary_pages_keep_their_text_and_tags_written_out_again():
    # On the 250 pages of the two extraction benchmarks the main text and title were the same
    # with and without the rewrite (benchmarks/html_bound.py); here, every visible text.
    for name in ("zh-news-gbk.html", "en-article.html", "no-content.html"):
        text = (PAGES / name).read_bytes().decode("gbk" if "gbk" in name else "utf-8")
        rewritten = bounded(text)
        assert _visible(rewritten) == _visible(text)
        assert [element.tag for element in _tree(rewritten).iter()] == [
            element.tag for element in _tree(text).iter() if isinstance(element.tag, str)
        ]
        assert bounded(rewritten) == rewritten  # written out once, read the same way again


def _tree(page: str):
    return lxml.html.document_fromstring(page)


def _visible(page: str) -> str:
    tree = _tree(page)
    for node in tree.xpath("//script|//style|//comment()"):
        node.drop_tree()
    return " ".join(tree.text_content().split())


def test_a_tag_of_200000_attributes_is_cut_to_the_bound_and_the_article_still_read():
    # 2.3 MB in one tag: lxml's parser did not finish such a page in 300 s (quadratic in the attributes)
    attributes = _attributes(200_000)
    page = f"<html><body><div {attributes}>{ARTICLE}</div></body></html>"
    assert _most_attributes(bounded(page)) == MAX_ATTRIBUTES
    assert "harbour town of Westmere" in extract(page.encode()).text


HIDDEN = {
    "in a comment the parser ends at once": "<!--><div {a}>x</div>-->",
    "in a comment ended by --!>": "<!-- x --!><div {a}>x</div>",
    "after a bogus comment": "<![CDATA[x<a href=\"<template><svg {a}<?php x'",
    "after a processing instruction": "<?php x ?><div {a}>x</div>",
    "in a script": "<script>var s = '<a b=\"';</script><div {a}>x</div>",
    "in a script the parser reads as escaped": "<script><!--<script></script><div {a}>x</div>",
    "in a style": "<style>p{{}}</style><p {a}>x</p>",
    "behind a quoted >": '<div a="1>2" {a}>x</div>',
    "behind a quoted <": "<div a='<' {a}>x</div>",
    "on an end tag": "</div {a}><p>x</p>",
    "in a textarea": "<textarea><b {a}></textarea>",
    "in svg": "<svg><g {a}/></svg>",
    "in math": "<math><mi {a}>x</mi></math>",
    "in noscript": "<noscript><div {a}></div></noscript>",
    "without spaces between quoted values": "<div " + "".join(f'a{i}="x"' for i in range(1000)) + ">x</div>",
    "after an end tag that is a bogus comment": "</3 a b><div {a}>x</div>",
    "in a quote after a double-escaped script's first end tag": '<script><!--<script></script><p title="</script><div {a}>">',
    "in a quote after a double-escaped script, by / and by '": "<script><!--<script/></script ><p t='</script><div {a}>'>",
    "after a comment in a noscript, which lxml reads as markup": '<noscript><!-- </noscript> <p title="--><div {a}>">',
    "after an end tag with a long s, which is no script's end": '<script></\u017fcript><p title="</script><div {a}>">',
    "after an end tag with a dotless i, which is no title's end": '<title></t\u0131tle><p title="</title><div {a}>">',
}


@pytest.mark.parametrize("where", sorted(HIDDEN))
def test_a_tag_cannot_hide_its_attributes_from_the_bound(where):
    page = "<html><body>" + HIDDEN[where].replace("{a}", _attributes(1000, values=True)) + "</body></html>"
    cut = bounded(page)
    assert cut != page  # cut, or left as text that no parser reads as a tag
    assert _most_attributes(cut) <= MAX_ATTRIBUTES


PIECES = [
    "<script>", "</script>", "<style>", "</style>", "<!--", "-->", "<!-->", "--!>", '"', "'", "<", ">", "=", " ",
    "<div ", "</div ", "<svg ", "<math ", "<![CDATA[", "]]>", "<textarea>", "</textarea>", "<title>", "</title>",
    "<noscript>", "</noscript>", "<iframe>", "</iframe>", "<plaintext>", "<_x ", "<?php ", "<!x ", "/", "text ",
    "<p>", '<a href="', "</p>", "\n", "<xmp>", "</xmp>", "<template>", "</template>", "<table>", "<td ", "</3",
    "</>", "<!DOCTYPE ", '<a b="x"', "c='", "<br/", "`",
]  # fmt: skip


@settings(max_examples=300)
@given(
    st.lists(
        st.one_of(st.sampled_from(PIECES), st.builds(_attributes, st.sampled_from([300, 700]), values=st.booleans())),
        min_size=1,
        max_size=25,
    )
)
def test_no_arrangement_of_markup_gets_more_attributes_past_the_bound(parts):
    page = "<html><body>" + "".join(parts) + "</body></html>"
    cut = bounded(page)
    assert _most_attributes(cut) <= MAX_ATTRIBUTES
    assert _most_attributes_as_trafilatura_reads(cut) <= MAX_ATTRIBUTES
    assert bounded(cut) == cut  # what is written out is read back the same way


def test_a_page_of_too_many_tags_costs_only_itself(database_url, tmp_path):
    # about 1 KB of parser memory a tag: 3 million <p> took 3 GB
    (tmp_path / "huge.html").write_text("<html><body>" + "<p>x</p>" * (MAX_ELEMENTS + 1) + "</body></html>")
    (tmp_path / "page.html").write_text(f"<html><body>{ARTICLE}</body></html>")
    with pytest.raises(DecodeError) as raised:
        extract((tmp_path / "huge.html").read_bytes())
    assert raised.value.reason == TOO_LARGE
    from simhash_store.cli import app

    env = {"SIMHASH_STORE_URL": database_url.render_as_string(hide_password=False)}
    result = CliRunner().invoke(app, ["add", str(tmp_path)], env=env)
    assert result.exit_code == 1, result.output  # as for a file over --max-file-size: one failed line
    assert "added 1," in result.output
    assert f"failed 1: {TOO_LARGE}" in result.output
    assert "huge.html: too large (200,003 tags in one page, more than 200,000)" in result.output
    assert "Traceback" not in result.output


def _depth(page: str) -> int:
    tree = _tree(page)
    return max(sum(1 for _ in element.iterancestors()) + 1 for element in tree.iter())


def test_a_deeply_nested_page_loses_the_tags_below_the_bound_and_keeps_its_text():
    # readability costs the tags times their depth: 199,000 tags 240 deep took 98 s against 20 s
    # flat. Below MAX_DEPTH an element's descendants lose their tags; the text and its order stay.
    chain = "<div>" * 240 + "deep words" + "</div>" * 240
    page = f"<html><body>{ARTICLE}{chain * 3}<p>after</p></body></html>"
    cut = bounded(page)
    assert _depth(page) > MAX_DEPTH and _depth(cut) == MAX_DEPTH
    assert _visible(cut) == _visible(page)
    assert bounded(cut) == cut
    assert ARTICLE[3:60] in extract(page.encode()).text
    # Pages that nest less are written out as before, lxml not asked.
    assert bounded(f"<html><body>{'<div>' * 40}x{'</div>' * 40}</body></html>").count("<div>") == 40


@pytest.mark.parametrize(
    "unit",
    [
        "<b><div></b>",  # `</b>` does not close a <div> opened after it (libxml2's end priorities): ignored
        "<span><td></span>",
        "<i><table></i>",
        "<div/>",  # a `/` a parser may ignore
        "<wbr>",  # not an element libxml2 knows to be empty
        "<p><div></p>",
        "<li><ul></body></html>",
        "<p><ul>" + "<ul>" * 54 + "</p>",  # libxml2 closed the <p> at <ul> and ignores `</p>`; an estimate that
        "<th><td>" * 30 + "</th>",  # took `</p>` as closing all above it never cut the page (195 s against 52 s)
        "<h5><li>" * 30 + "</h5>",
        "<div><frame></frame>",  # an element libxml2 treats as empty, whose end tag emptied that estimate
        "<embed>",  # nested by libxml2 2.14
        "<h5><li><figure><h2><figure><h2></h5><main><figure><li><h5><h2><main>",
    ],
)
def test_end_tags_a_parser_ignores_do_not_hide_nesting_from_the_bound(unit):
    page = f"<html><body>{ARTICLE}{unit * 300}x</body></html>"
    assert _depth(bounded(page)) <= MAX_DEPTH


@settings(max_examples=500, deadline=None)
@example(["<div>"] * 59 + ["</div>", "<li>", "</li>"] + ["<div>"] * 35)  # parsed again, one level deeper
@given(
    st.lists(
        st.sampled_from(
            ["<div>", "</div>", "<b>", "</b>", "<span>", "</span>", "<td>", "</td>", "<tr>", "</tr>", "<table>"]
            + ["</table>", "<p>", "</p>", "<li>", "</li>", "<ul>", "<br>", "<i/>", "</body>", "<body>", "x"]
            + ["<th>", "</th>", "<h5>", "</h5>", "<h2>", "<figure>", "<main>", "<dd>", "<dt>", "</dd>", "<option>"]
            + ["<frame>", "</frame>", "<embed>", "</embed>", "<wbr>", "<select>", "</select>", "<form>", "</form>"]
        ),
        min_size=100,
        max_size=600,
    )
)
def test_no_arrangement_of_tags_nests_past_the_bound(parts):
    page = "<html><body>" + "".join(parts) + "</body></html>"
    cut = bounded(page)
    assert _depth(cut) <= MAX_DEPTH
    assert _visible(cut) == _visible(page)


def _most_attributes_as_trafilatura_reads(page: str) -> int:
    from trafilatura.utils import load_html  # trafilatura's own loading: its repairs, then lxml

    tree = load_html(page)
    return max((len(element.attrib) for element in tree.iter() if isinstance(element.tag, str)), default=0)


UNHOLDABLE = ["\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1f", "\ufffe", "\uffff"]


@pytest.mark.parametrize("control", UNHOLDABLE, ids=lambda c: f"U+{ord(c):04X}")
def test_a_character_a_parser_deletes_cannot_open_a_tag_past_the_bound(control):
    # trafilatura deletes C0 controls, U+FFFE and U+FFFF before it parses: `<\x01div ...>` was text
    # to the bound's pass and to lxml, and a tag of every attribute to trafilatura (64,000 took 10 s,
    # growing with their square), which reads the pages readability finds nothing in.
    page = f"<html><body><p>x</p><p><{control}div {_attributes(1000)}>x</div></p></body></html>"
    cut = bounded(page)
    assert _most_attributes(cut) <= MAX_ATTRIBUTES
    assert _most_attributes_as_trafilatura_reads(cut) <= MAX_ATTRIBUTES


def test_a_page_holding_what_an_lxml_tree_cannot_is_read_not_a_traceback(database_url, tmp_path):
    # A control character after an element the extractors drop (a <script>, a comment): lxml
    # refused to join it to the text before it (ValueError), and add and dedup ended with a
    # traceback, the pages after it never read.
    controls = ["\x01", "&#1;", "&#x0B;", "&#0000012;", "\x0b", "\ufffe", "&#xFFFF;"]
    for control in controls:
        article = ARTICLE.replace("stone pier.", "stone pier." + control, 1)
        page = f"<html><body><script>var a = 1;</script>{control}tail<!-- x -->{control}{article}</body></html>"
        assert "harbour town of Westmere" in extract(page.encode()).text, control
    script = "".join(f"<script>var a = {i};</script>{control}" for i, control in enumerate(controls))
    (tmp_path / "a.html").write_text(f"<html><body>{script}{ARTICLE}</body></html>", encoding="utf-8")
    (tmp_path / "b.html").write_text(f"<html><body>{ARTICLE.replace('Westmere', 'Eastmere')}</body></html>")
    from simhash_store.cli import app

    env = {"SIMHASH_STORE_URL": database_url.render_as_string(hide_password=False)}
    result = CliRunner().invoke(app, ["add", str(tmp_path / "a.html"), str(tmp_path / "b.html")], env=env)
    assert result.exit_code == 0, result.output
    assert "added 2," in result.output and "Traceback" not in result.output
