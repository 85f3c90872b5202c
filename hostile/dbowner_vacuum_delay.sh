#!/bin/bash
# The database's owner makes every VACUUM sleep: the owner's optimize waits (wait_event Timeout/VacuumDelay).
S=.venv/bin/simhash-store; U=postgresql://h17_owner@127.0.0.1:5432/h17db
python3 -c "
import json
for i in range(5000): print(json.dumps({'key':f'v{i}','text':f'document number {i} with words {i*7} and {i*13} and more {i%97}'}))" > /tmp/h17-v.jsonl
$S add --db $U /tmp/h17-v.jsonl 2>&1 | tail -1
psql -X -q -h 127.0.0.1 -U h17_dbo -d postgres -c "ALTER DATABASE h17db SET vacuum_cost_delay = 100" -c "ALTER DATABASE h17db SET vacuum_cost_limit = 1" -c "ALTER DATABASE h17db SET vacuum_cost_page_hit = 10000" -c "ALTER DATABASE h17db SET vacuum_cost_page_miss = 10000"
time timeout 60 $S optimize --db $U 2>&1 | tail -2
psql -X -q -h 127.0.0.1 -U h17_dbo -d postgres -c "ALTER DATABASE h17db RESET ALL"
