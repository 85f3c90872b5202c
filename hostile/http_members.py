"""Odd /query, /add, /fingerprint bodies against serve --http: every answer should be 2xx/4xx JSON, never 500."""

import json
import sys
import urllib.request

base, token = sys.argv[1], sys.argv[2]


def post(path, body, raw=None, headers=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path,
        data=data,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()[:300]
    except urllib.error.HTTPError as e:
        return e.code, e.read()[:300]


cases = [
    ("/query", {"fingerprints": ["0" * 16], "k": 64}),
    ("/query", {"fingerprints": ["0" * 16], "k": 64, "max_results": 10**4000}),
    ("/query", {"fingerprints": ["0" * 16], "k": 64, "max_results": 2**63}),
    ("/query", {"fingerprints": ["0" * 16] * 1000, "k": 64}),
    ("/query", {"fingerprints": ["0" * 16] * 1000, "k": 64, "max_results": 101}),
    ("/query", {"fingerprints": [], "k": 3}),
    ("/query", {"texts": [], "fingerprints": []}),
    ("/query", {"fingerprints": ["0x" + "0" * 14]}),
    ("/query", {"fingerprints": ["-" + "1" * 15]}),
    ("/query", {"fingerprints": [" " + "0" * 16]}),
    ("/query", {"fingerprints": ["٠" * 16]}),
    ("/query", {"fingerprints": ["0" * 16], "k": 1.0}),
    ("/query", {"fingerprints": ["0" * 16], "k": -1}),
    ("/query", {"fingerprints": ["0" * 16], "max_results": 1.5}),
    ("/query", {"texts": ["\ud800"]}),
    ("/query", {"texts": ["a\x00b"]}),
    ("/add", {"documents": [{"key": "\u202eevil", "text": "hello world foo bar baz"}]}),
    ("/add", {"documents": [{"key": "x" * 100000, "text": "hello world foo bar baz"}]}),
    (
        "/add",
        {
            "documents": [
                {"key": "m", "text": "hello world foo bar baz qux", "metadata": {"a": 1e308, "b": -0.0, "c": 2**70}}
            ]
        },
    ),
    ("/add", {"documents": [{"key": "m2", "text": "hello world foo bar baz qux", "metadata": {"a\u0000": 1}}]}),
    ("/add", {"documents": [{"key": "m3", "text": "hello world foo bar baz qux", "metadata": {"a": "\\u0000"}}]}),
    ("/add", {"documents": [], "k": 0}),
    ("/add", {"documents": [{"key": 5, "text": "x"}]}),
    ("/add", {"documents": [{"key": "k0", "text": "changed text here now"}], "skip_near_duplicates": True, "k": 64}),
    ("/fingerprint", {"texts": ["word " * 100000]}),
]
for path, body in cases:
    status, out = post(path, body)
    print(status, path, json.dumps(body)[:80], out[:160])
raws = [
    ("/query", b'{"fingerprints": ["0000000000000000"], "k": 1e0}'),
    ("/query", b'{"fingerprints": ["0000000000000000"], "k": 3.0}'),
    ("/query", b'{"fingerprints": ["0000000000000000"], "k": NaN}'),
    ("/query", b'{"fingerprints": ["0000000000000000"], "max_results": Infinity}'),
    ("/add", b'{"documents": [{"key": "n", "text": "aa bb cc dd", "metadata": {"x": NaN}}]}'),
    ("/add", b'{"documents": [{"key": "n", "text": "aa bb cc dd", "metadata": {"x": 1e999}}]}'),
    ("/add", b'{"documents": [{"key": "n", "text": "aa bb cc dd", "metadata": {"x": -1e-999}}]}'),
    ("/query", b'\xef\xbb\xbf{"fingerprints": []}'),
    ("/query", b'{"fingerprints": ["0000000000000000"]} trailing'),
    ("/query", b"[" * 100000),
    ("/query", b'{"a":' * 100000),
    ("/query", b'{"fingerprints": ["' + b"0" * 16 + b'"], "k": ' + b"9" * 4300 + b"}"),
    ("/query", b'{"fingerprints": ["' + b"0" * 16 + b'"], "k": 1' + b"0" * 5000 + b"e-5000}"),
    ("/query", b'{"fingerprints": ["' + b"0" * 16 + b'"], "k": 0.' + b"0" * 5000 + b"1}"),
]
for path, raw in raws:
    status, out = post(path, None, raw=raw)
    print(status, path, raw[:60], out[:160])
