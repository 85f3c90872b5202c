"""``python -m simhash_store.cli``, as the ``simhash-store`` script."""

from . import main

main()
