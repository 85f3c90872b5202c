"""``python -m simhash_store.cli``, as the ``simhash-store`` script: passwords given on the
command line are hidden from ``ps`` too (here only once the package is imported)."""

import sys

from ..__main__ import hide_secrets_from_process_list

hide_secrets_from_process_list(sys.argv[1:])

from . import main  # noqa: E402  (after the command line is blanked)

main()
