"""simhash-store: a persistent, exact near-duplicate index for (mostly Chinese) text in PostgreSQL.

>>> from simhash_store import fingerprint, hamming
>>> hamming(fingerprint("今天天气很好，我们去公园散步。"), fingerprint("今天天气很好，我们去公园散步吧。")) < 10
True
"""

import sys

# `python -m simhash_store` (and `-m simhash_store.cli`) puts the working directory first on sys.path,
# before the standard library and the installed packages: run from a folder others may write (/tmp, a
# shared folder), a typing.py, typer.py or numpy.py of theirs there ran as the user. The package has
# been found by now; nothing it imports is taken from there (what `python -P` does). Python sets
# argv[0] to "-m" only while it looks for the module to run. (No `from __future__` import above: that
# module is not loaded at start-up outside a virtual environment, and would be looked for there too.)
if sys.argv[:1] == ["-m"] and sys.path and not getattr(sys.flags, "safe_path", False):
    import os

    try:
        _here = os.getcwd()
    except OSError:
        _here = ""
    if sys.path[0] == "" or (_here and os.path.realpath(sys.path[0]) == os.path.realpath(_here)):
        del sys.path[0]
    del os, _here

import importlib  # noqa: E402 - after the working directory left sys.path
import types  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

if TYPE_CHECKING:
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

# Imported on first use (PEP 562), so that `import simhash_store` and the command's entry point
# (simhash_store/__main__.py) are quick: the command hides passwords on its command line and takes
# Ctrl-C as one line before the heavy imports (numpy, SQLAlchemy, jieba) run.
_EXPORTS = {
    "blocks": "bits",
    "from_hex": "bits",
    "from_signed": "bits",
    "hamming": "bits",
    "join_blocks": "bits",
    "similarity": "bits",
    "to_hex": "bits",
    "to_signed": "bits",
    "Verdict": "dedup",
    "dedup": "dedup",
    "ConfigError": "errors",
    "DatabaseUnavailableError": "errors",
    "InvalidFingerprintError": "errors",
    "InvalidKeyError": "errors",
    "InvalidValueError": "errors",
    "LockTimeoutError": "errors",
    "NoFeaturesError": "errors",
    "PermissionDeniedError": "errors",
    "SchemeError": "errors",
    "SchemeMismatchError": "errors",
    "SimhashStoreError": "errors",
    "StoreNotFoundError": "errors",
    "StoreOutdatedError": "errors",
    "StoreTooNewError": "errors",
    "UntrustedSchemaError": "errors",
    "UserDictionaryError": "errors",
    "features": "fingerprint",
    "fingerprint": "fingerprint",
    "fingerprint_features": "fingerprint",
    "fingerprint_if_any": "fingerprint",
    "normalize": "fingerprint",
    "tokens": "fingerprint",
    "DEFAULT": "scheme",
    "DEFAULT_MAX_DISTANCE": "scheme",
    "SCHEMES": "scheme",
    "Scheme": "scheme",
    "get_scheme": "scheme",
    "register_scheme": "scheme",
    "parse_seed_line": "seed_format",
    "parse_weighted": "tokenizers",
}


class _Package(types.ModuleType):
    """This package, whose ``fingerprint`` and ``dedup`` are functions of the submodules of those
    names: importing a submodule sets the package's attribute of its name to it, which must not
    hide the function (the eager imports this replaces bound the function after the submodule)."""

    def __setattr__(name_self, name: str, value: Any) -> None:  # noqa: N805 - a module's own class
        if isinstance(value, types.ModuleType) and name in _EXPORTS:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


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
