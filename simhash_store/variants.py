"""Near-duplicate variants of a document, made the way they occur in the wild, deterministically.

The benchmarks (benchmarks/quality.py) and ``simhash-store calibrate`` make the same
variants with these functions. Every variant is a function of the text, a seeded random generator and (for an inserted
sentence) a donor text, so a rerun makes the same variants byte for byte.

>>> import random
>>> truncate(random.Random(0), "一二三四五六七八九十", "")
'一二三四五六七八九'
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

# ---------------------------------------------------------------- boilerplate
# News sites and reposting sites wrap the same article in their own header and footer.
# The names below are invented; the shapes are the ones these pages really use.

_SITES = [
    "华夏法治网",
    "东方资讯网",
    "江城晚报网",
    "南国都市在线",
    "百科知识网",
    "中原新闻网",
    "北方法制在线",
    "天府生活网",
]
_SOURCES = _SITES + ["本站综合", "网络整理", "新华社", "法制日报", "人民日报客户端", "央视新闻客户端"]
_PEOPLE = ["王晓明", "李静", "张海涛", "陈雪", "刘洋", "赵一鸣", "周婷", "孙建国", "吴敏", "郑凯"]
_SECTIONS = ["法治", "要闻", "社会", "百科", "政策解读", "地方新闻", "资讯"]

_HEADERS = [
    "{site} {date} {time}　来源：{source}　作者：{person}",
    "来源：{source}　　发布时间：{date} {time}　　责任编辑：{person}",
    "当前位置：首页 > {section} > 正文",
    "【{site}讯】",
    "发布时间：{date}　浏览次数：{views}　【字体：大 中 小】",
    "本文转载自{source}",
    "{site}{month}月{day}日电（记者 {person}）",
    "{date} {time} 来源：{source} 分享到：",
]
_FOOTERS = [
    "（责任编辑：{person}）",
    "本文转载自{source}，版权归原作者所有，如有侵权请联系本站删除。",
    "免责声明：本站所载文章仅代表作者观点，不代表本站立场，内容仅供读者参考。",
    "Copyright © {year}-2024 {site} 版权所有　京ICP备{icp}号",
    "分享到：微信　微博　QQ空间　【打印本页】【关闭窗口】",
    "扫一扫，关注{site}微信公众号，获取更多资讯。",
    "原文链接：https://www.example.com/{section_slug}/{date_slug}/{views}.html",
    "违法和不良信息举报电话：010-{phone}　举报邮箱：jubao@example.com",
    "【编辑：{person}　审核：{person2}】",
    "声明：转载此文是出于传递更多信息之目的。若有来源标注错误或侵犯了您的合法权益，请作者持权属证明与本网联系，我们将及时更正、删除，谢谢。",
]


# The same shapes on English pages (used for texts written mostly in Latin letters).
_EN_SITES = ["Daily Courier Online", "Metro Herald", "World News Wire", "The Morning Digest", "City Gazette Online"]
_EN_PEOPLE = ["John Smith", "Mary Jones", "David Brown", "Sarah Wilson", "James Taylor", "Emma Davies"]
_EN_HEADERS = [
    "{site} | {date} {time} | By {person}",
    "Published: {date} Updated: {time} Source: {site}",
    "Home > {section_slug} > Article",
    "By {person}, {site} correspondent",
    "Posted {date} in {section_slug}. {views} views. Share this article",
]
_EN_FOOTERS = [
    "Copyright © {year}-2024 {site}. All rights reserved.",
    "This article was originally published by {site}. Reproduction without permission is prohibited.",
    "Share on Facebook | Share on Twitter | Email this article | Print",
    "Follow {site} on social media for more news. Subscribe to our newsletter.",
    "Original link: https://www.example.com/{section_slug}/{date_slug}/{views}.html",
    "Reporting by {person}; editing by {person2}",
]
_IDEOGRAPH = re.compile("[\u3400-\u9fff]")
_LATIN_LETTER = re.compile("[A-Za-z\u00c0-\u024f]")


def _mostly_latin(text: str) -> bool:
    """A text written mostly in Latin letters (an English page), not Chinese."""
    return len(_LATIN_LETTER.findall(text)) > 4 * len(_IDEOGRAPH.findall(text))


def _fill(template: str, rng: random.Random) -> str:
    year, month, day = rng.randint(2012, 2024), rng.randint(1, 12), rng.randint(1, 28)
    return template.format(
        site=rng.choice(_EN_SITES if template in _EN_TEMPLATES else _SITES),
        source=rng.choice(_SOURCES),
        person=rng.choice(_EN_PEOPLE if template in _EN_TEMPLATES else _PEOPLE),
        person2=rng.choice(_EN_PEOPLE if template in _EN_TEMPLATES else _PEOPLE),
        section=rng.choice(_SECTIONS),
        section_slug=rng.choice(["news", "law", "society", "baike"]),
        date=f"{year}-{month:02d}-{day:02d}",
        date_slug=f"{year}{month:02d}",
        time=f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
        month=month,
        day=day,
        year=rng.randint(2000, 2015),
        views=rng.randint(100, 99999),
        icp=rng.randint(10000000, 99999999),
        phone=rng.randint(10000000, 99999999),
    )


_EN_TEMPLATES = frozenset(_EN_HEADERS + _EN_FOOTERS)


def add_boilerplate(rng: random.Random, text: str, donor: str) -> str:
    """A site header on top (1-2 lines), a footer below (1-3 lines), or both."""
    place = rng.choices(["top", "bottom", "both"], weights=[4, 3, 3])[0]
    headers, footers = (_EN_HEADERS, _EN_FOOTERS) if _mostly_latin(text) else (_HEADERS, _FOOTERS)
    if place in ("top", "both"):
        header = "\n".join(_fill(t, rng) for t in rng.sample(headers, rng.randint(1, 2)))
        text = header + "\n\n" + text
    if place in ("bottom", "both"):
        footer = "\n".join(_fill(t, rng) for t in rng.sample(footers, rng.randint(1, 3)))
        text = text.rstrip() + "\n\n" + footer + "\n"
    return text


# ---------------------------------------------------------------- layout

_FULL_WIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)} | {" ": "\u3000"}
_TO_FULL_WIDTH = str.maketrans(_FULL_WIDTH)
_TO_HALF_WIDTH = str.maketrans({full: half for half, full in _FULL_WIDTH.items()})
# Latin letters and digits, half or full width: an editor never wraps inside a run of them.
_ASCII_ALNUM = re.compile("[0-9A-Za-z\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]")


def reflow(rng: random.Random, text: str, donor: str) -> str:
    """Copy-paste damage: paragraphs re-wrapped at a fixed width, indentation and spacing
    changed, and punctuation, digits and Latin letters switched between full and half width."""
    width = rng.randint(24, 76)
    text = text.translate(_TO_HALF_WIDTH if rng.random() < 0.5 else _TO_FULL_WIDTH)
    indent = rng.choice(["", "\u3000\u3000", "    ", " "])
    separator = rng.choice(["\n", "\n\n", "\r\n"])
    paragraphs = [p.strip() for p in text.splitlines() if p.strip()]
    wrapped = []
    for paragraph in paragraphs:
        line, lines = indent, []
        for i, char in enumerate(paragraph):
            line += char
            next_char = paragraph[i + 1] if i + 1 < len(paragraph) else ""
            # Wrap like a text editor: never inside a run of Latin letters or digits.
            if len(line) >= width and not (_ASCII_ALNUM.match(char) and _ASCII_ALNUM.match(next_char)):
                lines.append(line + (" " if rng.random() < 0.2 else ""))
                line = ""
        if line:
            lines.append(line)
        wrapped.append("\n".join(lines))
    return separator.join(wrapped)


# ---------------------------------------------------------------- sentences

_SENTENCE = re.compile(r"[^。！？；!?\n]*(?:[。！？；!?]+[”’」』）)]*|\n+|$)")


# English sentences also end at a full stop before a space.
_LATIN_SENTENCE = re.compile(r"(?:[^.!?;\n]|\.(?!\s))*(?:[.!?;]+[\"')\]]*\s?|\n+|$)")


def sentences(text: str) -> list[str]:
    """Sentences with their end punctuation; line breaks are pieces of their own. They join back to the text."""
    pattern = _LATIN_SENTENCE if _mostly_latin(text) else _SENTENCE
    return [piece for piece in pattern.findall(text) if piece]


def _is_sentence(piece: str) -> bool:
    return len(piece.strip()) >= 4


def drop_sentences(rng: random.Random, text: str, fraction: float | None) -> str:
    """Drop one sentence (``fraction=None``) or that fraction of the sentences (at least one)."""
    pieces = sentences(text)
    candidates = [i for i, piece in enumerate(pieces) if _is_sentence(piece)]
    if len(candidates) < 2:
        return text
    count = 1 if fraction is None else max(1, round(fraction * len(candidates)))
    dropped = set(rng.sample(candidates, min(count, len(candidates) - 1)))
    return "".join(piece for i, piece in enumerate(pieces) if i not in dropped)


def drop_one_sentence(rng: random.Random, text: str, donor: str) -> str:
    return drop_sentences(rng, text, None)


def drop_tenth_of_sentences(rng: random.Random, text: str, donor: str) -> str:
    return drop_sentences(rng, text, 0.10)


def insert_sentence(rng: random.Random, text: str, donor: str) -> str:
    """One sentence of another document of the same collection, put between two sentences."""
    pieces = sentences(text)
    borrowed = [piece.strip() for piece in sentences(donor) if len(piece.strip()) >= 10]
    if not borrowed:
        return text
    position = rng.randint(0, len(pieces))
    return "".join(pieces[:position]) + rng.choice(borrowed) + "".join(pieces[position:])


# ---------------------------------------------------------------- characters


def edit_characters(rng: random.Random, text: str, rate: float) -> str:
    """Typos: ``rate`` of the visible characters replaced (half), doubled in (a quarter) or deleted."""
    positions = [i for i, char in enumerate(text) if not char.isspace()]
    if not positions:
        return text
    count = max(1, round(rate * len(positions)))
    pool = [text[i] for i in positions]
    chars = list(text)
    for i in sorted(rng.sample(positions, count), reverse=True):
        action = rng.random()
        if action < 0.5:
            chars[i] = rng.choice(pool)
        elif action < 0.75:
            chars.insert(i, rng.choice(pool))
        else:
            del chars[i]
    return "".join(chars)


def truncate(rng: random.Random, text: str, donor: str) -> str:
    """The first 90% of the characters, as a page cut off by a length limit."""
    return text[: int(len(text) * 0.9)]


# ---------------------------------------------------------------- titles


def retitle(rng: random.Random, text: str, donor: str) -> str:
    """A repost under a new, keyword-stuffed title: the first line (the old title, when it
    is a short line) replaced by a title made of the donor's first words and the
    document's own, repeated one to three times at the top, as reposting sites do."""
    lines = text.splitlines()
    if len(lines) > 1 and len(lines[0].strip()) <= 120:
        body = "\n".join(lines[1:]).lstrip("\n")
        old_title = lines[0].strip().lstrip("#").strip()
    else:
        body, old_title = text, ""
    latin = _mostly_latin(text)
    if latin:
        donor_words = donor.split()[: rng.randint(3, 8)]
        own = old_title.split()[: rng.randint(0, 4)]
        title = " ".join(donor_words + own).strip() + " | " + rng.choice(_EN_SITES)
    else:
        compact = re.sub(r"\s+", "", donor)
        start = compact.find("\n") + 1
        title = compact[start : start + rng.randint(8, 20)] + old_title[: rng.randint(0, 10)] + "_" + rng.choice(_SITES)
    return "\n".join([title] * rng.randint(1, 3)) + "\n\n" + body


# ---------------------------------------------------------------- the kinds reported

Variant = Callable[[random.Random, str, str], str]

LIGHT: dict[str, Variant] = {
    "boilerplate": add_boilerplate,
    "reflow": reflow,
    "drop 1 sentence": drop_one_sentence,
    "insert 1 sentence": insert_sentence,
    "edit 1%": lambda rng, text, donor: edit_characters(rng, text, 0.01),
}
HEAVY: dict[str, Variant] = {
    "edit 3%": lambda rng, text, donor: edit_characters(rng, text, 0.03),
    "drop 10% sentences": drop_tenth_of_sentences,
    "truncate 90%": truncate,
    "boilerplate + edit 2%": lambda rng, text, donor: add_boilerplate(rng, edit_characters(rng, text, 0.02), donor),
}
KINDS: dict[str, Variant] = LIGHT | HEAVY
# Reported on their own (not in LIGHT or HEAVY, so calibrate's figures stay comparable).
TITLES: dict[str, Variant] = {"retitle": retitle}


def make_variant(kind: str, key: str, text: str, donor: str, seed: str = "") -> str:
    """The variant of one kind of one document; the generator is seeded by both names
    (and ``seed``, to draw another set of variants of the same kinds)."""
    return (KINDS | TITLES)[kind](random.Random(f"{seed}{kind}|{key}"), text, donor)
