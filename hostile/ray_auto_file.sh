#!/bin/bash
# As root: h12mallory owns /tmp/ray (0777, as Ray makes it) and its ray_current_cluster; h12alice's
# --ray auto must refuse it. Then the file is alice's (a cluster of hers that stopped, the file left).
export RAY_TMPDIR=/tmp/h12raytmp
M="runuser -u h12mallory --"; A="runuser -u h12alice -- env HOME=/home/h12alice RAY_TMPDIR=$RAY_TMPDIR"
PY='import site; site.addsitedir("/work/wt-hostile12-local/.venv/lib/python3.11/site-packages")
from simhash_store.ray_data import resolved_address
try: print("resolved:", resolved_address("auto"))
except Exception as e: print(type(e).__name__, str(e)[:160])'
$M bash -c "mkdir -p -m 777 $RAY_TMPDIR $RAY_TMPDIR/ray; chmod 777 $RAY_TMPDIR/ray; echo 127.0.0.1:45999 > $RAY_TMPDIR/ray/ray_current_cluster; chmod 666 $RAY_TMPDIR/ray/ray_current_cluster"
echo "== mallory's file"; $A /usr/bin/python3 -c "$PY"
$M ln -sf /home/h12alice/addr $RAY_TMPDIR/ray/ray_current_cluster.l; $M mv -f $RAY_TMPDIR/ray/ray_current_cluster.l $RAY_TMPDIR/ray/ray_current_cluster
echo "== mallory's link"; $A /usr/bin/python3 -c "$PY"
$M rm -f $RAY_TMPDIR/ray/ray_current_cluster; $A bash -c "echo 127.0.0.1:45999 > $RAY_TMPDIR/ray/ray_current_cluster"
echo "== alice's own stale file (mallory could now listen on that port)"; $A /usr/bin/python3 -c "$PY"
rm -rf $RAY_TMPDIR
