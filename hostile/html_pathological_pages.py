"""Pathological pages through extract(): time and peak memory of each (run under prlimit)."""

import resource
import sys
import time

from simhash_store.decoding import DecodeError
from simhash_store.html import extract

TEXT = "The harbour town of Westmere voted on Tuesday to rebuild its old stone pier. " * 20
MB = 1 << 20
PAGES = {
    "comment never ends": b"<html><body><p>" + TEXT.encode() + b"</p><!--" + b"a-- -> <p>x</p>" * (20 * MB // 14),
    "meta tags 200k": b"<html><head>"
    + b'<meta name="x" content="y">' * 150_000
    + b"</head><body><p>"
    + TEXT.encode()
    + b"</p></body></html>",
    "meta http-equiv 150k no charset": b"<html><head>"
    + b'<meta http-equiv="content-type" content="text/html">' * 150_000
    + b"</head><body><p>"
    + TEXT.encode()
    + b"</p></body></html>",
    "attribute value 50MB": b'<html><body><p title="'
    + b"x" * (50 * MB)
    + b'">'
    + TEXT.encode()
    + b"</p></body></html>",
    "attribute value unclosed 50MB": b"<html><body><p>" + TEXT.encode() + b'</p><p title="' + b"x>" * (25 * MB),
    "cdata unclosed": b"<html><body><p>" + TEXT.encode() + b"</p><![CDATA[" + b"]>" * (10 * MB),
    "script unclosed 30MB": b"<html><body><p>" + TEXT.encode() + b"</p><script>" + b"<!--<script>" * (30 * MB // 12),
    "textarea 20MB of tags": b"<html><body><p>" + TEXT.encode() + b"</p><textarea>" + b"<p>" * (20 * MB // 3),
    "entity soup 20MB": b"<html><body><p>" + b"&amp;&#x1F600;&nbsp;&bogus;" * (20 * MB // 27) + b"</p></body></html>",
    "one word 30MB": b"<html><body><p>" + b"a" * (30 * MB) + b"</p></body></html>",
    "lt run 20MB": b"<html><body><p>" + TEXT.encode() + b"<" * (20 * MB) + b"</p></body></html>",
    "many charset metas late": b"<html><head>"
    + b"<!-- "
    + b"x" * (5 * MB)
    + b" -->"
    + b'<meta charset="gbk">' * 100_000
    + b"</head><body><p>"
    + TEXT.encode()
    + b"</p></body></html>",
}
names = sys.argv[1:] or list(PAGES)
for name in names:
    page = PAGES[name]
    start = time.time()
    try:
        result = extract(page)
        outcome = f"{result.reason or 'text'} {len(result.text or '')} chars {result.charset}"
    except DecodeError as error:
        outcome = f"DecodeError {error}"
    except Exception as error:  # what this looks for
        outcome = f"TRACEBACK {type(error).__name__}: {str(error)[:200]}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{name:34} {len(page) / MB:6.1f} MB {time.time() - start:7.1f} s peak {peak} MB  {outcome}", flush=True)
