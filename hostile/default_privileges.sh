#!/bin/bash
# Default privileges of the owner (set by the owner long ago for its other schemas, or by a superuser at
# another role's request) grant REFERENCES and TRIGGER on new tables to another role: the owner's first
# init makes the store's tables with them, and that role can run code as the owner at once (a foreign key
# whose check casts through its own cast), before any later command refuses the store.
DB=${1:-h16r_d}
P="psql -q -h 127.0.0.1 -U root"
$P -d postgres -c "DROP DATABASE IF EXISTS $DB" 2>/dev/null
$P -d postgres -c "CREATE DATABASE $DB OWNER h16_owner"
$P -d $DB -c "ALTER DEFAULT PRIVILEGES FOR ROLE h16_owner GRANT REFERENCES, TRIGGER ON TABLES TO h16_crt"
/work/wt-h16-roles/.venv/bin/simhash-store --db postgresql://h16_owner@127.0.0.1:5432/$DB init | tail -1
$P -d $DB -Atc "SELECT has_table_privilege('h16_crt', 'simhash.documents', 'REFERENCES'), has_table_privilege('h16_crt', 'simhash.documents', 'TRIGGER')"
$P -d postgres -c "DROP DATABASE $DB"
