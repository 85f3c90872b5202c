#!/bin/bash
# As root: h12mallory plants things at or above the path of h12alice's serve --http unix:PATH.
set -u
M="runuser -u h12mallory --"; A="runuser -u h12alice -- env HOME=/home/h12alice"
try() { echo "== $1"; $A timeout 20 /tmp/h12ss serve --http "unix:$1" > /tmp/h12http.out 2>&1; echo "exit $? $(tail -1 /tmp/h12http.out | cut -c1-200)"; }
$M bash -c 'mkdir -p /tmp/h12mdir && chmod 777 /tmp/h12mdir; python3 -c "import socket;s=socket.socket(socket.AF_UNIX);s.bind(\"/tmp/h12m.sock\")"; ln -sfn /home/h12alice/run /tmp/h12mlink'
$A mkdir -p -m 700 /home/h12alice/run
try /tmp/h12m.sock                 # mallory's socket in /tmp
try /tmp/h12new.sock               # a fresh name in /tmp
try /tmp/h12mdir/s.sock            # mallory's directory
try /tmp/h12mlink/s.sock           # mallory's link to alice's directory
$A bash -c 'mkdir -p -m 700 /tmp/h12adir'
$M bash -c 'ln -s /home/h12alice/docs /tmp/h12adir/x 2>&1 | cut -c1-80'  # cannot write in alice's dir
try /tmp/h12adir/s.sock            # alice's own private dir in /tmp: expected to serve
rm -rf /tmp/h12mdir /tmp/h12m.sock /tmp/h12mlink /tmp/h12adir /tmp/h12new.sock /tmp/h12http.out
