"""What a store keeps of its clusters, as text to compare two stores byte for byte."""

from __future__ import annotations

import json

import psycopg
from sqlalchemy.engine import URL, make_url

STATEMENTS = {
    "documents": "SELECT id, key, fingerprint, cluster, arrival, length FROM simhash.documents ORDER BY id",
    "heads": "SELECT cluster, representative_id FROM simhash.cluster_heads ORDER BY cluster",
    "store": "SELECT cluster_max_distance, keep_policy FROM simhash.store_info",
}


def stored_clusters(url: str | URL) -> dict[str, str]:
    """Every document's id, key, fingerprint, cluster, arrival and length, the heads, the store's
    distance and keep policy, ordered."""
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(plain) as connection:
        return {
            name: json.dumps(connection.execute(sql).fetchall(), ensure_ascii=False) for name, sql in STATEMENTS.items()
        }
