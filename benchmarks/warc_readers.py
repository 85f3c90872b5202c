"""WARC readers: time per response record for warcio (used) and FastWARC (when installed), against extraction.

A gzipped WARC of N response records (a 7 KB page each) is written with warcio in memory and
read back by each reader, every HTTP body read whole. The baseline in the same run is the
time simhash-store takes to extract one such page's main content, which dominates a crawl.

    python benchmarks/warc_readers.py             # 3,000 records
    python benchmarks/warc_readers.py --records 500
"""

from __future__ import annotations

import argparse
import io
import time

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simhash_store.html import extract
from simhash_store.warc import read_pages

PAGE = (
    "<html><head><meta charset=utf-8><title>标题</title></head><body><div class=nav>首页 新闻</div>"
    + "<p>正文内容，一段新闻的文字 some English words too.</p>" * 150
    + "</body></html>"
).encode("utf-8")


def archive(records: int) -> bytes:
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    for number in range(records):
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        record = writer.create_warc_record(
            f"http://example.com/{number}", "response", payload=io.BytesIO(PAGE), http_headers=http
        )
        writer.write_record(record)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    args = parser.parse_args()
    data = archive(args.records)
    rows = []
    started = time.perf_counter()
    count = sum(len(page.body) > 0 for page in read_pages(io.BytesIO(data)))
    rows.append(("simhash_store.warc.read_pages (warcio)", count, time.perf_counter() - started))
    started = time.perf_counter()
    count = 0
    for record in ArchiveIterator(io.BytesIO(data)):
        if record.rec_type == "response":
            count += len(record.content_stream().read()) > 0
    rows.append(("warcio ArchiveIterator alone", count, time.perf_counter() - started))
    try:
        from fastwarc.warc import ArchiveIterator as FastIterator
        from fastwarc.warc import WarcRecordType
    except ImportError:
        pass
    else:
        started = time.perf_counter()
        count = sum(
            len(record.reader.read()) > 0
            for record in FastIterator(io.BytesIO(data), record_types=WarcRecordType.response, parse_http=True)
        )
        rows.append(("FastWARC", count, time.perf_counter() - started))
    started = time.perf_counter()
    for _ in range(20):
        extract(PAGE)
    extraction = (time.perf_counter() - started) / 20
    print(f"{args.records} response records of {len(PAGE):,} bytes, {len(data) / 1e6:.1f} MB gzipped")
    print("| reader | records | µs / record | share of extracting the page |")
    print("|---|--:|--:|--:|")
    for name, count, seconds in rows:
        per = seconds / count
        print(f"| {name} | {count} | {1e6 * per:.0f} | {per / extraction:.1%} |")
    print(f"| baseline: extracting one page (simhash_store.html.extract) | | {1e6 * extraction:.0f} | 100% |")


if __name__ == "__main__":
    main()
