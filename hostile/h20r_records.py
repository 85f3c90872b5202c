"""Records for the pass: 40 shipped paragraphs, each with a near copy (prefixed), dated."""

import json
import sys

sys.path.insert(0, "tests")
import sample_text  # noqa: E402

out = sys.argv[1]
with open(out, "w") as f:
    for i, text in enumerate(sample_text.paragraphs()):
        day = f"{i % 28 + 1:02d}"
        for key, body, date in ((f"p{i}", text, f"2024-01-{day}"), (f"p{i}c", "【转载】" + text, f"2023-01-{day}")):
            f.write(json.dumps({"key": key, "text": body, "published_at": date}, ensure_ascii=False) + "\n")
