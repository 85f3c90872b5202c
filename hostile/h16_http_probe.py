"""Hostile request bodies and headers against `serve --http` (argv: URL RW_TOKEN)."""

import http.client
import json
import sys
from urllib.parse import urlparse

url, token = sys.argv[1], sys.argv[2]
where = urlparse(url)


def send(method, path, body=b"", headers=None, raw=None):
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
    try:
        if raw is not None:
            connection.connect()
            connection.sock.sendall(raw)
            return connection.sock.recv(4096)[:300]
        heads = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        heads.update(headers or {})
        connection.request(method, path, body=body, headers=heads)
        answer = connection.getresponse()
        return answer.status, answer.read()[:300]
    except Exception as exc:  # noqa: BLE001
        return "EXC", repr(exc)
    finally:
        connection.close()


cases = {
    "k float 3.0": ("/query", {"texts": ["北京的新闻"], "k": 3.0}),
    "k true": ("/query", {"texts": ["北京的新闻"], "k": True}),
    "k 1e400": ("/query", b'{"texts": ["x"], "k": 1e400}'),
    "k 5000 digits": ("/query", b'{"texts": ["x"], "k": ' + b"9" * 5000 + b"}"),
    "max_results 0": ("/query", {"texts": ["北京的新闻"], "max_results": 0}),
    "max_results -1": ("/query", {"texts": ["北京的新闻"], "max_results": -1}),
    "max_results 2**70": ("/query", {"texts": ["北京的新闻"], "max_results": 2**70}),
    "nesting 100000": ("/query", b'{"texts": ' + b"[" * 100000 + b"]" * 100000 + b"}"),
    "texts null item": ("/fingerprint", {"texts": [None, 5, "北京"]}),
    "text NUL": ("/fingerprint", {"texts": ["北京\x00的新闻"]}),
    "text lone surrogate": ("/fingerprint", b'{"texts": ["\\ud800 \\u5317\\u4eac"]}'),
    "fp fullwidth": ("/query", {"fingerprints": ["１a9b7ec51a667204"]}),
    "fp underscore": ("/query", {"fingerprints": ["1a9b_7ec51a66720"]}),
    "fp 0x": ("/query", {"fingerprints": ["0x9b7ec51a667204"]}),
    "fp spaces": ("/query", {"fingerprints": [" 1a9b7ec51a66720"]}),
    "fp plus": ("/query", {"fingerprints": ["+1a9b7ec51a66720"]}),
    "fp signed neg": ("/query", {"fingerprints": ["-1a9b7ec51a66720"]}),
    "duplicate member": ("/query", b'{"texts": ["a"], "texts": 5}'),
    "body BOM": ("/fingerprint", b'\xef\xbb\xbf{"texts": ["\xe5\x8c\x97\xe4\xba\xac"]}'),
    "body utf16": ("/fingerprint", '{"texts": ["北京"]}'.encode("utf-16")),
    "body invalid utf8": ("/fingerprint", b'{"texts": ["\xff\xfe"]}'),
    "body NaN": ("/query", b'{"texts": ["x"], "k": NaN}'),
    "add deep metadata": (
        "/add",
        {"documents": [{"key": "m1", "text": "北京的新闻", "metadata": json.loads("[" * 300 + "]" * 300)}]},
    ),
    "add metadata big int": (
        "/add",
        b'{"documents": [{"key": "m2", "text": "x y z", "metadata": {"a": ' + b"9" * 4400 + b"}}]}",
    ),
    "add key bidi": ("/add", {"documents": [{"key": "k\u202e\x1b[2J", "text": "北京的新闻 今天"}]}),
    "add key 2048 4-byte": ("/add", {"documents": [{"key": "\U0001f600" * 512, "text": "北京的新闻 今天"}]}),
    "add documents dict": ("/add", {"documents": {"key": "x"}}),
    "add documents string": ("/add", {"documents": "abc"}),
    "texts string": ("/fingerprint", {"texts": "abc"}),
    "body array": ("/fingerprint", [1, 2]),
    "body number": ("/fingerprint", 5),
    "empty body": ("/fingerprint", b""),
}
for name, (path, body) in cases.items():
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    print(f"{name}: {send('POST', path, data)}")

AUTH = b"Authorization: Bearer " + token.encode()
raws = {
    "CL negative": b"POST /fingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + token.encode()
    + b"\r\nContent-Length: -5\r\n\r\n",
    "CL huge": b"POST /fingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + token.encode()
    + b"\r\nContent-Length: 99999999999999999999999\r\n\r\n{}",
    "CL twice": b"POST /fingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + token.encode()
    + b"\r\nContent-Length: 2\r\nContent-Length: 30\r\n\r\n{}",
    "chunked bad": b"POST /fingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + token.encode()
    + b"\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n{}",
    "auth twice": b"GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nAuthorization: Bearer "
    + token.encode()
    + b"\r\n\r\n",
    "auth lowercase": b"POST /fingerprint HTTP/1.1\r\nHost: x\r\nauthorization: bearer "
    + token.encode()
    + b'\r\nContent-Length: 16\r\n\r\n{"texts": ["a"]}',
    "auth non-ascii": b"POST /fingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\nContent-Length: 2\r\n\r\n{}",
    "path double slash": b"POST //fingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + token.encode()
    + b'\r\nContent-Length: 16\r\n\r\n{"texts": ["a"]}',
    "path encoded": b"POST /%66ingerprint HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
    + token.encode()
    + b'\r\nContent-Length: 16\r\n\r\n{"texts": ["a"]}',
}
for name, raw in raws.items():
    print(f"{name}: {send('POST', '/', raw=raw)}")
