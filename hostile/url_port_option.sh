#!/bin/sh
# A port given as a URL option: SQLAlchemy's ArgumentError traceback before the fix.
S=${S:-simhash-store}
$S --db "postgresql://u@127.0.0.1:5432/x?sslpassword=SECRET&port=abc" stats; echo "exit $?"
$S --db "postgresql://u@/x?host=127.0.0.1,127.0.0.2&port=5432,5432,5432" stats; echo "exit $?"
