#!/bin/sh
# As the database's owner (not the store's): ALTER DATABASE ... SET defaults every session takes,
# then the store owner's add / query / stats. Prints each command's exit code and last line.
DB=${DB:-h19r_db}; OWNER=${OWNER:-h19r_owner}; DBOWNER=${DBOWNER:-h19r_dbowner}
U=postgresql://$OWNER@127.0.0.1:5432/$DB
S=${S:-.venv/bin/simhash-store}
printf 'alpha beta gamma delta epsilon zeta eta theta iota kappa %s\n' "$$" > /tmp/h19r_in.txt
for setting in "$@"; do
  psql -h 127.0.0.1 -U $DBOWNER -d $DB -q -c "ALTER DATABASE $DB SET $setting" 2>&1 | sed "s/^/  set: /"
  for cmd in "add /tmp/h19r_in.txt" "query /tmp/h19r_in.txt" "stats"; do
    out=$(SIMHASH_STORE_LOCK_TIMEOUT=3 timeout 60 $S --db $U $cmd 2>&1); rc=$?
    echo "[$setting] $cmd -> rc=$rc: $(printf '%s' "$out" | tail -1 | cut -c1-220)"
  done
  psql -h 127.0.0.1 -U $DBOWNER -d $DB -q -c "ALTER DATABASE $DB RESET ALL"
done
