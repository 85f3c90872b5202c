#!/bin/sh
# A key the terminal's encoding cannot write: a traceback of rich's before the fix.
d=$(mktemp -d); printf '北京的新闻' > "$d/café.txt"
PYTHONIOENCODING=ascii simhash-store fingerprint "$d"; echo "rc=$?"
rm "$d/café.txt"; rmdir "$d"
