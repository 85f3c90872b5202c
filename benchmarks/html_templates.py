"""Articles in site templates: raw HTML fingerprinted as it is, against its extracted main content.

Real articles (Chinese: Wikipedia pages of the shared corpus, their paragraphs joined by title,
and the opening 3,000 characters of laws; English: the article bodies of the Article Extraction
Benchmark, when its folder is given) are wrapped in three site templates of the kinds crawls
hold: a news portal (menus, a ticker, related headlines, share scripts, a comment thread,
a long footer), a blog (a sidebar of tags and recent posts, comments, analytics scripts) and a
forum-style portal (breadcrumbs, a hot list, advertisements, a login box). The changing parts of
each page (related headlines, comments, recent posts) are other articles' titles and sentences,
as on a real site.

Two targets at the default k (11): the same article in two templates within it in >= 0.97 of
cases; two different articles in one template beyond it in >= 0.99. Baseline in the same run:
the page's decoded text as `add` stores a file today (markup and all).

    python benchmarks/html_templates.py                      # Chinese only, 150 articles
    python benchmarks/html_templates.py --en DIR --articles 100
"""

from __future__ import annotations

import argparse
import html
import itertools
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simhash_store.bits import hamming  # noqa: E402
from simhash_store.fingerprint import fingerprint_if_any  # noqa: E402
from simhash_store.html import decode_page, extract  # noqa: E402
from simhash_store.scheme import DEFAULT_MAX_DISTANCE  # noqa: E402

from shared_corpus import load_laws  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def chinese_articles() -> list[tuple[str, list[str]]]:
    by_title: dict[str, list[str]] = defaultdict(list)
    for line in (CORPUS / "zh-wiki" / "cmrc2018-contexts.jsonl").read_text("utf-8").splitlines():
        row = json.loads(line)
        by_title[row["title"]].append(row["text"])
    articles = [(title, paragraphs) for title, paragraphs in by_title.items() if sum(map(len, paragraphs)) >= 800]
    for law in load_laws():
        lines = [line.strip("# ") for line in law.text.splitlines() if line.strip()]
        kept, size = [], 0
        for line in lines[1:]:
            kept.append(line)
            size += len(line)
            if size >= 3000:
                break
        if size >= 800:
            articles.append((lines[0], kept))
    return articles


def english_articles(folder: Path) -> list[tuple[str, list[str]]]:
    truth = json.loads((folder / "ground-truth.json").read_text("utf-8"))
    articles = []
    for value in truth.values():
        paragraphs = [p.strip() for p in value["articleBody"].split("\n") if p.strip()]
        if sum(map(len, paragraphs)) >= 800:
            articles.append((paragraphs[0][:80], paragraphs))
    return articles


def _sentences(articles: list[tuple[str, list[str]]]) -> list[str]:
    found = []
    for _title, paragraphs in articles:
        for paragraph in paragraphs:
            found.extend(
                s.strip() + "。" for s in paragraph.replace("！", "。").split("。") if 10 <= len(s.strip()) <= 80
            )
    return found


_ZH = {
    "menu": "首页 新闻 国内 国际 财经 科技 体育 娱乐 汽车 房产 教育 健康 旅游 军事 文化 视频 图片 专题 评论 数据".split(),
    "footer": "关于我们 | 联系我们 | 广告服务 | 招聘信息 | 法律声明 | 隐私政策 | 网站地图 | 违法和不良信息举报电话：12377 | "
    "互联网新闻信息服务许可证 | 京ICP证000000号 | 京公网安备 11000002000001号 | 版权所有 © 2003-2024 未经授权禁止转载",
    "related": "相关阅读",
    "hot": "热门排行",
    "comments": "网友评论",
    "share": "分享到：微信 微博 QQ空间",
    "login": "用户名 密码 登录 注册 忘记密码",
    "ad": "广告 限时优惠 点击了解更多 立即下载客户端",
    "tags": "标签",
    "recent": "最新文章",
    "crumbs": "您的位置：首页 > 新闻中心 > 正文",
}
_EN = {
    "menu": "Home News World Business Technology Science Health Sports Culture Travel Opinion Video Podcasts Newsletters".split(),
    "footer": "About us | Contact | Advertise | Careers | Terms of use | Privacy policy | Cookie settings | Sitemap | "
    "© 2024 Example Media Group. All rights reserved. Reproduction without permission is prohibited.",
    "related": "Related stories",
    "hot": "Most read",
    "comments": "Comments",
    "share": "Share on Facebook Twitter Email",
    "login": "Sign in Register Forgot your password",
    "ad": "Advertisement Subscribe now for unlimited access",
    "tags": "Tags",
    "recent": "Recent posts",
    "crumbs": "You are here: Home > News > Article",
}
_SCRIPT = (
    "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}"
    "gtag('js',new Date());gtag('config','UA-000000-1');var _hmt=_hmt||[];(function(){var hm=document.createElement"
    "('script');hm.src='//stats.example.com/hm.js?abc';var s=document.getElementsByTagName('script')[0];"
    "s.parentNode.insertBefore(hm,s)})();</script>"
)


def _list(items: list[str], css: str) -> str:
    links = "".join(f'<li><a href="/a/{number}.html">{html.escape(item)}</a></li>' for number, item in enumerate(items))
    return f'<ul class="{css}">{links}</ul>'


def _each(items: list[str], shape: str) -> str:
    """``shape`` filled with each item's number and escaped text, joined."""
    return "".join(shape.format(i=i, n=i + 1, text=html.escape(item)) for i, item in enumerate(items))


def _body(paragraphs: list[str]) -> str:
    return "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)


def news_portal(title: str, paragraphs: list[str], words: dict, others: list[str], comments: list[str]) -> str:
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}_新闻中心</title>
<link rel="stylesheet" href="/css/main.css">{_SCRIPT}</head><body>
<div id="top"><div class="nav">{_list(words["menu"], "menu")}</div><div class="ticker">{_list(others[:4], "ticker")}</div></div>
<div class="crumbs">{words["crumbs"]}</div>
<div class="main"><h1>{html.escape(title)}</h1><div class="meta">2024-03-18 09:21 来源：本站</div>
<div class="article-content" id="content">{_body(paragraphs)}</div>
<div class="share">{words["share"]}</div>
<div class="related"><h3>{words["related"]}</h3>{_list(others[4:12], "related-list")}</div>
<div class="comments"><h3>{words["comments"]}</h3>{_each(comments, '<div class="comment"><span>user{i}</span><p>{text}</p></div>')}</div>
</div><div class="footer"><p>{words["footer"]}</p></div>
<script src="/js/jquery.min.js"></script><script>$(function(){{$('.ticker').marquee();}});</script></body></html>"""


def blog(title: str, paragraphs: list[str], words: dict, others: list[str], comments: list[str]) -> str:
    return f"""<html><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<title>{html.escape(title)} | 博客 Blog</title>
<style>body{{font-family:serif}} .sidebar{{float:right;width:30%}}</style></head><body>
<header><a href="/">My Blog</a><nav>{_list(words["menu"][:6], "top")}</nav></header>
<aside class="sidebar"><h4>{words["recent"]}</h4>{_list(others[:6], "recent")}<h4>{words["tags"]}</h4>
<div class="tagcloud">{_each(others[6:10], '<a href="/tag/{i}">{text}</a> ')}</div></aside>
<article class="post"><h2 class="post-title">{html.escape(title)}</h2><div class="entry-content">{_body(paragraphs)}</div></article>
<section id="comments"><h3>{words["comments"]} ({len(comments)})</h3>
<ol>{_each(comments, "<li><cite>guest{i}</cite><p>{text}</p></li>")}</ol>
<form><textarea name="comment"></textarea><button>Submit</button></form></section>
<footer><p>{words["footer"][:60]}</p></footer>{_SCRIPT}</body></html>"""


def forum_portal(title: str, paragraphs: list[str], words: dict, others: list[str], comments: list[str]) -> str:
    return f"""<!doctype html><html lang="zh"><head><meta charset="utf-8">
<title>{html.escape(title)} - 门户网 Portal</title>{_SCRIPT}</head><body><div class="topbar">{words["login"]}</div>
<div class="header">{_list(words["menu"], "mainnav")}{_list(words["menu"][::-1], "subnav")}</div>
<div class="ad">{words["ad"]}</div><div class="wrap"><div class="left">
<div class="crumbs">{words["crumbs"]}</div><div class="thread"><h1>{html.escape(title)}</h1>
<div class="post-body">{_body(paragraphs)}</div></div>
<div class="replies">{_each(comments, '<div class="reply"><b>#{n}</b> {text}</div>')}</div></div>
<div class="right"><h3>{words["hot"]}</h3>{_list(others[:10], "hotlist")}<div class="ad">{words["ad"]}</div></div></div>
<div class="links">{_list(others[10:16], "friend-links")}</div><div class="footer">{words["footer"]}</div></body></html>"""


TEMPLATES = {"news portal": news_portal, "blog": blog, "forum portal": forum_portal}


def pages(articles: list[tuple[str, list[str]]], words: dict, rng: random.Random) -> dict[tuple[int, str], bytes]:
    titles = [title for title, _ in articles]
    sentences = _sentences(articles)
    built = {}
    for index, (title, paragraphs) in enumerate(articles):
        for name, template in TEMPLATES.items():
            others = rng.sample(titles, min(16, len(titles)))
            comments = rng.sample(sentences, rng.randint(3, 8))
            built[index, name] = template(title, paragraphs, words, others, comments).encode("utf-8")
    return built


def measure(label: str, articles: list[tuple[str, list[str]]], words: dict, rng: random.Random, k: int) -> None:
    built = pages(articles, words, rng)
    raw, extracted, empty, elapsed = {}, {}, 0, 0.0
    for key, data in built.items():
        raw[key] = fingerprint_if_any(decode_page(data).text)
        started = time.perf_counter()
        page = extract(data)
        elapsed += time.perf_counter() - started
        empty += page.reason is not None
        extracted[key] = fingerprint_if_any(page.text) if page.text else None
    names = list(TEMPLATES)
    same = [((i, a), (i, b)) for i in range(len(articles)) for a, b in itertools.combinations(names, 2)]
    different = []
    for name in names:
        for _ in range(len(articles) * 3):
            i, j = rng.sample(range(len(articles)), 2)
            different.append(((i, name), (j, name)))
    print(f"\n{label}: {len(articles)} articles x {len(names)} templates, k = {k}")
    print(
        "| fingerprinted | same article, two templates: within k | different articles, one template: beyond k |"
        " median distance same / different | no main content | ms / page |"
    )
    print("|---|---|---|---|---|---|")
    for name, prints in (("raw HTML (today)", raw), ("extracted main content", extracted)):
        within = [p for p in same if prints[p[0]] is not None and prints[p[1]] is not None]
        apart = [p for p in different if prints[p[0]] is not None and prints[p[1]] is not None]
        d_same = sorted(hamming(prints[a], prints[b]) for a, b in within)
        d_diff = sorted(hamming(prints[a], prints[b]) for a, b in apart)
        hit = sum(d <= k for d in d_same) / max(1, len(same))  # a page without a fingerprint counts as a miss
        kept = sum(d > k for d in d_diff) / max(1, len(different))
        cost = f"{1000 * elapsed / len(built):.1f}" if name.startswith("extracted") else "-"
        print(
            f"| {name} | {hit:.3f} ({len(same)} pairs) | {kept:.3f} ({len(different)} pairs) |"
            f" {d_same[len(d_same) // 2] if d_same else '-'} / {d_diff[len(d_diff) // 2] if d_diff else '-'} |"
            f" {empty if name.startswith('extracted') else '-'} | {cost} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=150, help="articles of each language (default 150)")
    parser.add_argument("--en", type=Path, help="folder of the Article Extraction Benchmark (ground-truth.json)")
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    zh = chinese_articles()
    measure("Chinese", rng.sample(zh, min(args.articles, len(zh))), _ZH, rng, DEFAULT_MAX_DISTANCE)
    if args.en:
        en = english_articles(args.en)
        measure("English", rng.sample(en, min(args.articles, len(en))), _EN, rng, DEFAULT_MAX_DISTANCE)


if __name__ == "__main__":
    main()
