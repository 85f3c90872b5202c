#!/bin/sh
# As root. h16mallory makes /tmp/runtime-<h16alice's uid> first; h16alice runs without XDG_RUNTIME_DIR
# (cron, su): with platformdirs 4.14+ every command failed with a traceback while the directory stayed.
A=h16alice; M=h16mallory; AU=$(id -u $A)
su $M -c "mkdir -m 777 /tmp/runtime-$AU"
su $A -c "cd ~ && env -u XDG_RUNTIME_DIR SIMHASH_STORE_DATA_DIR=/home/$A/d9 /home/$A/venv/bin/simhash-store init 2>&1 | tail -2; echo exit=\$?"
rmdir /tmp/runtime-$AU
