#!/bin/sh
# As root: h16mallory owns a shared folder /tmp/h16team (1777, sticky); h16alice's own link there,
# /tmp/h16team/store -> ~/d1, is her SIMHASH_STORE_DATA_DIR. The sticky bit does not hold back the
# folder's owner: mallory renames alice's other link there (scratch -> ~/d2) over it; alice's next command finds no store.
A=h16alice; M=h16mallory; V=/home/$A/venv/bin/simhash-store
rm -rf /tmp/h16team; su $M -c "mkdir -m 1777 /tmp/h16team"
su $A -c "rm -rf ~/d1 ~/d2; mkdir -m 700 ~/d1 ~/d2 && ln -s /home/$A/d1 /tmp/h16team/store && ln -s /home/$A/d2 /tmp/h16team/scratch"
printf '{"key":"a","text":"the quick brown fox jumps over the lazy dog again and again"}\n' > /tmp/h16in.jsonl; chmod 644 /tmp/h16in.jsonl
su $A -c "cd ~ && SIMHASH_STORE_DATA_DIR=/tmp/h16team/store $V add /tmp/h16in.jsonl 2>&1 | tail -1"
su $M -c "mv -T /tmp/h16team/scratch /tmp/h16team/store"
su $A -c "cd ~ && SIMHASH_STORE_DATA_DIR=/tmp/h16team/store $V stats 2>&1 | tail -1"
rm -rf /tmp/h16team /tmp/h16in.jsonl
