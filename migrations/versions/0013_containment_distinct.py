"""Containment counts each distinct segment fingerprint once: contained v2, containment_pairs v2

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26

Version 1 of ``simhash.contained`` and ``simhash.containment_pairs`` (revision 0009) joined
each copy of a repeated segment with each copy on the other side before counting: a paragraph
repeated 2,000 times in a stored page and in the text asked about took 35 s for one
``query --containment`` (17 s for ``containment_pairs``), growing with the copies squared, and
whoever may add documents can store such a page. Version 2 groups the segments by fingerprint
first and adds the copies back as counts: the same answers (0.012 and 0.015 s there), and time
in proportion to the segments. Signatures, results, settings and grants are version 1's
(``CREATE OR REPLACE`` keeps the grants). The downgrade puts version 1 back.
"""

from collections.abc import Sequence

from simhash_store.migrations import sqlfiles

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    sqlfiles.create("contained.v2", "containment_pairs.v2")


def downgrade() -> None:
    sqlfiles.create("contained.v1", "containment_pairs.v1")
