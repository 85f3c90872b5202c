#!/bin/bash
# -j N forked N fingerprinting workers at once (about 160 MB each, the dictionaries) whatever the
# cores: count the processes of a dedup of 200 records at -j 12 on this machine (before: 13; after:
# the cores, two at least, plus the command). Never try -j 1000 on a shared machine.
# Usage: jobs_past_cores.sh DB_URL
S=${S:-$(dirname "$0")/../.venv/bin/simhash-store}
dir=$(mktemp -d)
python3 -c "
import json
T=['今天天气很好我们去公园散步吧','明天下雨我们在家里看书学习','北京是中国的首都有很多名胜古迹','上海是一个国际化的大都市经济发达']
with open('$dir/in.jsonl','w') as f:
  for i in range(200): f.write(json.dumps({'key':f'j{i}','text':T[i%4]*(1+i%5)+str(i)+'号文件'},ensure_ascii=False)+'\n')
"
"$S" --db "$1" dedup "$dir/in.jsonl" -o "$dir/out.jsonl" -j 12 2>/dev/null &
most=0
while kill -0 $! 2>/dev/null; do n=$(pgrep -fc "dedup $dir/in.jsonl"); [ "$n" -gt "$most" ] && most=$n; sleep 0.2; done
echo "most processes at once: $most (cores: $(nproc))"
rm -rf "$dir"
