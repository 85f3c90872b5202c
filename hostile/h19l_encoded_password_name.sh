#!/bin/sh
# As root: h19l_victim runs `simhash-store --db 'postgresql://app@127.0.0.1:PORT/db?pass%77ord=SECRET...' stats`
# against a listener that never answers (the command keeps connecting for 20 s); h19l_mallory reads
# every process's /proc/PID/cmdline. Before the fix the password stayed there: the entry point compared
# the option names as written, while the URL parser decodes them (pass%77ord is password).
set -u
PORT=54931
/usr/bin/python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', $PORT)); s.listen()
time.sleep(25)" &
listener=$!
sleep 1
cd /home/h19l_victim
runuser -u h19l_victim -- env -i HOME=/home/h19l_victim PATH=/home/h19l_victim/venv/bin:/usr/bin:/bin \
    simhash-store --db "postgresql://app@127.0.0.1:$PORT/db?pass%77ord=SECRETh19l&connect_timeout=20" stats \
    >/dev/null 2>&1 &
victim=$!
sleep 5
victim_uid=$(id -u h19l_victim)
runuser -u h19l_mallory -- /usr/bin/python3 -c "
import glob, os
for path in glob.glob('/proc/[0-9]*/cmdline'):
    try:
        if os.stat(os.path.dirname(path)).st_uid != $victim_uid:
            continue  # the victim's own processes only (not the runuser that started them)
        text = open(path, 'rb').read()
    except OSError:
        continue
    if b'SECRETh19l' in text:
        print('VULNERABLE: read in', path, text.replace(b'\0', b' ')[:160])
        break
else:
    print('held: the password is in no command line')
"
wait "$victim"
kill "$listener" 2>/dev/null
