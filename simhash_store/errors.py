"""One error hierarchy: the library raises these, the CLI prints them as one line."""

from __future__ import annotations


class SimhashStoreError(Exception):
    """Base class of every error simhash-store raises on purpose."""


class SchemeError(SimhashStoreError, ValueError):
    """An unknown scheme, a malformed scheme description, or a scheme used where it cannot be."""


class UserDictionaryError(SchemeError):
    """A scheme's jieba user dictionary that cannot be used: missing or unreadable, not a regular
    file, over 64 MiB, not UTF-8, or not the file whose SHA-256 the scheme records. It is the
    scheme's problem, not one document's: fingerprinting stops at it."""


class SchemeMismatchError(SimhashStoreError):
    """The store was created with another fingerprint scheme; the two cannot be mixed."""


class ConfigError(SimhashStoreError, ValueError):
    """A database URL or setting that cannot be used."""


class DatabaseError(SimhashStoreError):
    """The database refused or failed the work (not a bug in the caller's input)."""


class DatabaseUnavailableError(DatabaseError):
    """The database could not be reached, or went away during the work."""


class PermissionDeniedError(DatabaseError):
    """The database role may not do this (for example a read-only role writing)."""


class UntrustedSchemaError(PermissionDeniedError):
    """The store's schema is one that another role can change: owned by a role this session does
    not trust, open to CREATE by others, or holding objects of another role (see trust.py)."""


class InvalidKeyError(SimhashStoreError, ValueError):
    """A document key that PostgreSQL cannot store faithfully."""


class InvalidFingerprintError(SimhashStoreError, ValueError):
    """A fingerprint value or text that is not what it should be."""


class NoFeaturesError(SimhashStoreError, ValueError):
    """A text in which the scheme finds no features (empty, punctuation only, or a script the
    scheme does not read), so it has no fingerprint: a value such as 0 would put it at distance 0
    from every other such text. ``fingerprint_if_any`` returns None for it instead."""


class InvalidValueError(SimhashStoreError, ValueError):
    """A value the store cannot hold as given: an integer outside its column's range, metadata
    that JSON in PostgreSQL cannot represent (NaN, NUL, lone surrogates), a wrong type."""


class StoreSchemaError(SimhashStoreError):
    """The database holds no store, or one at a revision this version does not read as it is."""


class StoreNotFoundError(StoreSchemaError):
    """No simhash store in the database: a read does not create one (``init``, ``add`` or ``import`` do)."""


class StoreOutdatedError(StoreSchemaError):
    """The store is at an older revision: a read does not upgrade it (``init`` or any write does)."""


class StoreTooNewError(StoreSchemaError):
    """The store was made or upgraded by a newer version of simhash-store (an unknown revision)."""


class LockTimeoutError(DatabaseError):
    """A lock the work needs was not granted within its ``lock_timeout``: someone else holds it."""


class InputError(SimhashStoreError):
    """An input file or stream that cannot be used at all."""


class OutputError(SimhashStoreError):
    """A file to be written that cannot be: its directory missing or not writable, a directory in
    its place, a format not known, or an optional library it needs not installed."""


class WorkerDiedError(SimhashStoreError):
    """A fingerprinting worker process died (killed, or out of memory) before its documents were done."""


class SimhashStoreWarning(UserWarning):
    """Something the library could not do and the caller should know (for example: no right to vacuum)."""
