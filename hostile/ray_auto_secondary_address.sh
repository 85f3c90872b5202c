#!/bin/sh
# dedup --ray auto asks who answered its connection to the recorded head only when the answer's
# address is loopback or the connection's own source address. To a second address of an interface
# (its local route's source is the interface's first address) the kernel picks the first address
# as the source, so the answer was taken as another machine's and not checked: another local user
# listening there on the port of a stopped cluster of alice's got Ray's connections.
# Run as root: a network namespace of its own (lo with 10.200.0.1/24, then 10.200.0.2/24: a second
# address), users h14alice and h14mallory, SITE naming a site-packages with simhash-store (installed -e: .pth).
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${IN_NETNS:-}" ]; then exec env IN_NETNS=1 unshare -n "$here/$(basename "$0")"; fi
PORT=46379
ADDR=${ADDR:-10.200.0.2}  # ADDR=10.200.0.1 (the first address): 0 passed before the fix too
ip link set lo up
ip addr add 10.200.0.1/24 dev lo
ip addr add 10.200.0.2/24 dev lo
ip route get 10.200.0.2
setpriv --reuid=h14mallory --regid=h14mallory --init-groups /usr/bin/python3 "$here/ray_auto_secondary_address_mallory.py" $ADDR $PORT &
mallory=$!
sleep 1
tmp=$(setpriv --reuid=h14alice --regid=h14alice --init-groups mktemp -d)
setpriv --reuid=h14alice --regid=h14alice --init-groups sh -c "mkdir $tmp/ray && printf $ADDR:$PORT > $tmp/ray/ray_current_cluster"
cd /
setpriv --reuid=h14alice --regid=h14alice --init-groups env HOME=/home/h14alice RAY_TMPDIR=$tmp SITE="$SITE" \
  /usr/bin/python3 -c '
import os, site
site.addsitedir(os.environ["SITE"])
from simhash_store.errors import InputError
from simhash_store.ray_data import resolved_address
passed = refused = 0
for _ in range(300):
    try:
        resolved_address("auto")
        passed += 1
    except InputError as exc:
        refused += 1
        if "answered by" in str(exc) or "held by" in str(exc):
            continue
print(f"alice: of 300 tries, {passed} passed the checks (Ray would connect next), {refused} refused")'
sleep 1
kill $mallory
rm -r "$tmp"
