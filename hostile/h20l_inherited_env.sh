#!/bin/sh
# As root: h20l_victim inherits environment variables naming files of h20l_mallory's (a shared
# profile's settings): PYTHONSTARTUP, libpq's TLS, service, password and Kerberos files, OpenSSL's
# configuration, TZ. `add` (the embedded server, started fresh) are traced with strace;
# every open of a file under /tmp/h20l_m is printed.
set -u
M=/tmp/h20l_m
rm -f /tmp/h20l_env.trace*
cd /home/h20l_victim
runuser -u h20l_victim -- env -i HOME=/home/h20l_victim PATH=/home/h20l_victim/venv/bin:/usr/bin:/bin \
    PYTHONSTARTUP=$M/startup.py PGSSLROOTCERT=$M/root.crt PGSSLCERT=$M/client.crt PGSSLKEY=$M/client.key \
    PGSERVICEFILE=$M/service.conf PGPASSFILE=$M/pgpass PGSYSCONFDIR=$M/pgsysconf PGLOCALEDIR=$M/locale \
    KRB5_CONFIG=$M/krb5.conf KRB5CCNAME=FILE:$M/krb5cc OPENSSL_CONF=$M/openssl.cnf SSL_CERT_FILE=$M/certs.pem \
    TZ=:$M/zone PGTZ=$M/zone INPUTRC=$M/inputrc \
    strace -f -qq -e trace=open,openat,execve,stat,newfstatat,access -o /tmp/h20l_env.trace \
    sh -c 'simhash-store add /tmp/h20l_in.jsonl >/dev/null; echo "exit $?"'
grep -h "$M" /tmp/h20l_env.trace* | grep -v ENOENT | sed 's/^[0-9]* //' | sort | uniq -c | sort -rn | head -20
[ -e $M/RAN ] && echo "FOUND: a file of mallory's ran" || echo "none of mallory's files ran"
