#!/bin/sh
# As root: h19l_mallory plants typing.py and typer.py in a folder every user may write (sticky, like
# /tmp); h19l_victim runs `python -m simhash_store stats` from there. Before the fix mallory's
# modules ran as the victim (PWNED holds the victim's uid); `simhash-store` itself never did.
set -u
D=/tmp/h19l_python_m
rm -rf "$D"; mkdir -m 1777 "$D"
for m in typing typer json numpy; do
    printf 'import os\nopen("%s/PWNED", "a").write(f"%s ran as uid {os.getuid()}\\n")\n' "$D" "$m" |
        runuser -u h19l_mallory -- tee "$D/$m.py" >/dev/null
done
cd "$D"
runuser -u h19l_victim -- env -i HOME=/home/h19l_victim PATH=/home/h19l_victim/venv/bin:/usr/bin:/bin \
    python -m simhash_store --help >/dev/null 2>&1
if [ -s "$D/PWNED" ]; then echo "VULNERABLE:"; cat "$D/PWNED"; else echo "held: none of mallory's modules ran"; fi
rm -rf "$D"
