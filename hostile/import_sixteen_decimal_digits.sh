#!/bin/sh
# A CSV of decimal fingerprints (as PostgreSQL bigint or PyPI simhash write them): the one of
# exactly 16 digits was stored as the hex value of those digits, silently; the signed one of
# 16 characters refused. Usage: hostile/import_sixteen_decimal_digits.sh DB_URL
set -e
dir=$(mktemp -d)
printf 'key,fingerprint\nb,1234567890123456\na,12345678901234567890\nd,-123456789012345\n' > "$dir/dec.csv"
simhash-store --db "$1" import "$dir/dec.csv" --scheme pypi-simhash || true
psql "$1" -c "select key, fingerprint from simhash.documents order by key"   # b must be 1234567890123456
rm -r "$dir"
