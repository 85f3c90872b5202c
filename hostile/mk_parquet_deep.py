# ruff: noqa
import sys, pyarrow as pa, pyarrow.parquet as pq

depth = int(sys.argv[1])
out = sys.argv[2]
t = pa.int64()
v = 1
for _ in range(depth):
    t = pa.list_(t)
    v = [v]
tab = pa.table(
    {
        "key": ["k1", "k2"],
        "text": ["今天天气很好我们去公园散步吧", "另一个文本内容完全不同的句子"],
        "deep": pa.array([v, v], type=t),
    }
)
pq.write_table(tab, out)
print("ok", depth)
