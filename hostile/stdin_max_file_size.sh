#!/bin/bash
# add - --max-file-size 100G under a 4 GB address-space limit (1T anywhere): one read(n) of the pipe
# allocated n bytes first, a MemoryError traceback; 99999999999999999999999T an OverflowError one.
# Usage: stdin_max_file_size.sh DB_URL
S=${S:-$(dirname "$0")/../.venv/bin/simhash-store}
for size in 100G 1T 99999999999999999999999T; do
  (ulimit -v 4000000; echo "保护人民的合法权利" | "$S" --db "$1" add - --max-file-size $size 2>&1 | tail -1)
done
