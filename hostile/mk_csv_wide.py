# ruff: noqa
"""CSV with a header of N columns and R rows of empty cells: each byte (a comma) is a dict entry."""

import sys

n, rows, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open(out, "w") as f:
    f.write("key,text," + ",".join(f"c{i}" for i in range(n)) + "\n")
    for r in range(rows):
        f.write(f"k{r},今天天气很好我们去公园散步吧第{r}行" + "," * n + "\n")
