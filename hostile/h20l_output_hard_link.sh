#!/bin/sh
# As root (fs.protected_hardlinks on): h20l_victim (umask 077) shares one file with a team group
# that h20l_mallory is in (0660). Mallory, who may read and write it, hard-links it at the name of
# the victim's next output in /tmp; the victim runs `dedup -o /tmp/h20l_hl/clean.jsonl`. The output
# took the shared file's group and mode (0660, the team), as the victim's own earlier output would
# have kept them: mallory could then rewrite the victim's output. Fixed: a file with other names
# passes on nothing; the output is made under the victim's umask (0600).
set -u
D=/tmp/h20l_hl
groupadd h20l_team 2>/dev/null
usermod -aG h20l_team h20l_victim; usermod -aG h20l_team h20l_mallory
rm -rf "$D"; mkdir -m 1777 "$D"
runuser -u h20l_victim -- sh -c 'mkdir -p ~/team && echo "shared notes" > ~/team/notes.txt && chgrp h20l_team ~/team/notes.txt && chmod 660 ~/team/notes.txt && chmod 755 ~/team'
runuser -u h20l_mallory -- ln /home/h20l_victim/team/notes.txt "$D/clean.jsonl" && echo "mallory linked the shared file at $D/clean.jsonl"
cp /tmp/h20l_in.jsonl "$D/in.jsonl"; chmod 644 "$D/in.jsonl"
(cd "$D" && runuser -u h20l_victim -- env -i HOME=/home/h20l_victim PATH=/home/h20l_victim/venv/bin:/usr/bin:/bin \
    sh -c 'umask 077; simhash-store dedup in.jsonl -o clean.jsonl'); echo "dedup exit $?"
ls -l "$D/clean.jsonl" /home/h20l_victim/team/notes.txt
if runuser -u h20l_mallory -- sh -c "echo '{\"key\": \"planted\", \"text\": \"mallory was here\"}' >> $D/clean.jsonl" 2>/dev/null; then
    echo "FOUND: mallory rewrote the victim's output"
else
    echo "held: mallory may not write the victim's output"
fi
rm -rf "$D"
gpasswd -d h20l_victim h20l_team >/dev/null; gpasswd -d h20l_mallory h20l_team >/dev/null; groupdel h20l_team
