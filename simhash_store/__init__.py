"""simhash-store: a persistent, exact near-duplicate index for (mostly Chinese) text in PostgreSQL.

>>> from simhash_store import fingerprint, hamming
>>> hamming(fingerprint("今天天气很好，我们去公园散步。"), fingerprint("今天天气很好，我们去公园散步吧。")) < 10
True
"""

from .bits import blocks, from_hex, from_signed, hamming, join_blocks, similarity, to_hex, to_signed
from .dedup import Verdict, dedup
from .errors import (
    ConfigError,
    DatabaseUnavailableError,
    InvalidFingerprintError,
    InvalidKeyError,
    InvalidValueError,
    LockTimeoutError,
    NoFeaturesError,
    PermissionDeniedError,
    SchemeError,
    SchemeMismatchError,
    SimhashStoreError,
    StoreNotFoundError,
    StoreOutdatedError,
    StoreTooNewError,
    UntrustedSchemaError,
    UserDictionaryError,
)
from .fingerprint import (
    features,
    fingerprint,
    fingerprint_features,
    fingerprint_if_any,
    normalize,
    tokens,
)
from .scheme import DEFAULT, DEFAULT_MAX_DISTANCE, SCHEMES, Scheme, get_scheme, register_scheme
from .seed_format import parse_seed_line
from .tokenizers import parse_weighted

__all__ = [
    "DEFAULT",
    "DEFAULT_MAX_DISTANCE",
    "SCHEMES",
    "ConfigError",
    "DatabaseUnavailableError",
    "InvalidFingerprintError",
    "InvalidKeyError",
    "InvalidValueError",
    "LockTimeoutError",
    "NoFeaturesError",
    "PermissionDeniedError",
    "Scheme",
    "SchemeError",
    "SchemeMismatchError",
    "SimhashStoreError",
    "StoreNotFoundError",
    "StoreOutdatedError",
    "StoreTooNewError",
    "UntrustedSchemaError",
    "UserDictionaryError",
    "Verdict",
    "blocks",
    "dedup",
    "features",
    "fingerprint",
    "fingerprint_features",
    "fingerprint_if_any",
    "from_hex",
    "from_signed",
    "get_scheme",
    "hamming",
    "join_blocks",
    "normalize",
    "parse_seed_line",
    "parse_weighted",
    "register_scheme",
    "similarity",
    "to_hex",
    "to_signed",
    "tokens",
]
