#!/bin/sh
# As root: h16mallory plants /tmp/h16store as a link to a directory of h16alice's; h16alice's
# SIMHASH_STORE_DATA_DIR=/tmp/h16store is accepted (the check saw only the resolved path). Later
# mallory repoints the link at another of alice's directories: alice's next command finds an empty store.
set -u
A=h16alice; M=h16mallory; V=/home/$A/venv/bin/simhash-store
rm -f /tmp/h16store
su $A -c "mkdir -p ~/d1 ~/d2 && chmod 700 ~/d1 ~/d2"
su $M -c "ln -s /home/$A/d1 /tmp/h16store"
printf '{"key":"a","text":"the quick brown fox jumps over the lazy dog again and again"}\n' > /tmp/h16in.jsonl; chmod 644 /tmp/h16in.jsonl
su $A -c "cd ~ && SIMHASH_STORE_DATA_DIR=/tmp/h16store $V add /tmp/h16in.jsonl; echo exit=\$?"
su $A -c "cd ~ && SIMHASH_STORE_DATA_DIR=/tmp/h16store $V stats 2>&1 | head -3"
su $M -c "ln -sfn /home/$A/d2 /tmp/h16store"    # repointed
su $A -c "cd ~ && SIMHASH_STORE_DATA_DIR=/tmp/h16store $V stats 2>&1 | head -3; echo exit=\$?"
su $A -c "ls ~/d1 ~/d2"
