"""Output files, written where neighbours may be: a private temporary name, a lock, a rename.

An output directory may be shared (a team's data folder, ``/tmp``), so nothing here opens
a name someone else could have chosen: the file is written under a new random name beside
the target (created with ``O_EXCL | O_NOFOLLOW``: a symlink planted there is never followed)
and renamed over the target only when complete, so a reader sees the old file or the whole
new one. A lock file beside the target (``.NAME.lock``, opened without following links and
locked with ``flock``) keeps two runs from writing one output at once: the second stops at
once with one line. A run killed with ``kill -9`` leaves its lock file (unlocked: the kernel
releases it) and its temporary file; the next run for the same output removes both.

>>> with OutputFile("clean.jsonl") as handle:  # doctest: +SKIP
...     handle.file.write('{"key": "a"}\\n')
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..errors import OutputError
from ..ownership import links_replaceable

try:
    import fcntl
except ImportError:  # Windows: no flock; the temporary name and the rename still hold
    fcntl = None  # type: ignore[assignment]

_SUFFIX = ".partial"
_LONG_NAME_BYTES = 200  # a stem plus ".xxxxxxxx.partial" stays within a file name's 255 bytes


class OutputFile:
    """A file being written for ``path``: ``file`` is its stream; :meth:`commit` puts it in place.

    ``binary``: a byte stream, otherwise UTF-8 text with line endings as written.
    Raises OutputError when another run is writing ``path``, or it cannot be written.
    """

    def __init__(self, path: str, *, binary: bool = False) -> None:
        self.path = path
        directory, name = os.path.split(path)
        self._directory = directory or "."
        if not name or os.path.isdir(path):
            raise OutputError(f"cannot write {path}: it is a directory")
        # /dev/stdout, /dev/fd/1, /proc/self/fd/1: a name of this process's open file, whose link
        # the rename would replace (as root, the machine's /dev/stdout became a regular file, and the
        # file standard output went to stayed empty).
        if _names_an_open_file(path):
            raise OutputError(
                f"cannot write {path}: it names an open file of this process (as /dev/stdout does), not a file "
                "of its own; write to '-' for standard output, or to a file"
            )
        # The finished file is renamed over the path: a device (/dev/null), a FIFO or a socket
        # there would be replaced by a regular file, for every user of the machine.
        previous: os.stat_result | None = None
        with contextlib.suppress(OSError):
            previous = os.stat(path)
            if not stat.S_ISREG(previous.st_mode):
                raise OutputError(
                    f"cannot write {path}: it is not a regular file (a device, FIFO or socket); "
                    "write to a file, or to '-' for standard output"
                )
        if not os.path.isdir(self._directory):
            raise OutputError(f"cannot write {path}: no directory {self._directory}")
        # A link on the way to the directory that another user made, or may repoint (in a directory
        # they may write without the sticky bit): /tmp/results made a link to a directory of the
        # victim's before they wrote -o /tmp/results/clean.jsonl put the output there, over their
        # file of that name (where the kernel follows such links: fs.protected_symlinks off).
        repointable = links_replaceable(Path(self._directory))
        if repointable:
            raise OutputError(
                f"cannot write {path}: {repointable}, who could send the output where they choose; "
                "write to a directory reached through links of your own"
            )
        stem = (
            name
            if len(os.fsencode(name)) <= _LONG_NAME_BYTES
            else hashlib.blake2b(os.fsencode(name), digest_size=10).hexdigest()
        )
        self._stem = stem
        self._lock = _Lock(os.path.join(self._directory, f".{stem}.lock"), path)
        acl = None
        if previous is not None:
            # Owner, mode and ACL are read from one open handle, so that a file swapped in under the
            # name meanwhile is the file they are read from. Another user's file (or link) there,
            # in a directory they may write, passes on nothing: its permissions are theirs to choose
            # (0666, an ACL naming them), not this output's.
            previous, acl = _permissions_to_keep(path, previous)
        try:
            _remove_stale(self._directory, stem)
            self.temporary, descriptor = _create(self._directory, stem, previous, acl)
        except OSError as exc:
            self._lock.release()
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        except BaseException:
            # A signal between the file's creation and its name being kept here (in _create before
            # its own guard, or on the way back): the file is found by its pattern, under the lock.
            with contextlib.suppress(BaseException):
                _remove_stale(self._directory, stem)
            self._lock.release()
            raise
        try:
            self._identity = _identity(os.fstat(descriptor))
            self.file: IO[Any] = (
                os.fdopen(descriptor, "wb") if binary else os.fdopen(descriptor, "w", encoding="utf-8", newline="")
            )
        except BaseException:  # a signal here: the file made is removed, and the lock released
            with contextlib.suppress(OSError):
                os.close(descriptor)
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)
            self._lock.release()
            raise
        self._done = False

    def commit(self) -> None:
        """Flush the file to disk and rename it over ``path``."""
        if self._done:
            return
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            os.replace(self.temporary, self.path)
            self._done = True
            _sync_directory(self._directory)
        finally:
            if not self._done:
                self.abandon()
            else:
                self._lock.release()

    def abandon(self) -> None:
        """Stop without publishing: the temporary file goes, ``path`` is untouched."""
        if self._done:
            return
        self._done = True
        try:
            self.file.close()
        finally:
            try:
                # Only the file this run created: in a directory others may write, someone could
                # have put a file of theirs under its name meanwhile.
                if _identity(os.stat(self.temporary, follow_symlinks=False)) == self._identity:
                    os.unlink(self.temporary)
            except OSError:
                pass
            finally:
                self._lock.release()

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if kind is None:
            self.commit()
        else:
            self.abandon()


def _names_an_open_file(path: str) -> bool:
    """Whether ``path``, or a link on the way from it, is a name under /proc (``/dev/stdout`` links to
    ``/proc/self/fd/1``, ``/dev/fd`` to ``/proc/self/fd``): a process's descriptor, not a file to replace."""
    current = path
    for _ in range(40):  # the kernel's own bound on links followed
        directory = os.path.realpath(os.path.dirname(current) or ".")
        if directory == "/proc" or directory.startswith("/proc/"):
            return True
        try:
            target = os.readlink(current)
        except OSError:  # not a link (or nothing there): a file of its own
            return False
        current = os.path.join(os.path.dirname(current), target)
    return False


class _Lock:
    """An exclusive ``flock`` on a file beside the output, created if need be and removed on release."""

    def __init__(self, lock_path: str, path: str) -> None:
        self.lock_path = lock_path
        self._descriptor: int | None = None
        if fcntl is None:
            return
        while True:
            try:
                # O_NONBLOCK: a FIFO planted under the lock's name must not hang the open. O_RDWR: over NFS,
                # flock is a POSIX write lock, which needs a descriptor open for writing.
                descriptor = os.open(
                    lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600
                )
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise OutputError(f"cannot write {path}: {lock_path} is a symbolic link (remove it)") from None
                raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
            opened = os.fstat(descriptor)
            if not stat.S_ISREG(opened.st_mode):
                os.close(descriptor)
                raise OutputError(f"cannot write {path}: {lock_path} is not a regular file (remove it)")
            # Another user's lock file (in /tmp, a shared folder) is theirs to remove, even while this run
            # holds it: a second run writing the same output then made a lock of its own, went ahead at
            # once and removed this run's temporary file, and this run's output was lost at its end.
            if opened.st_uid != os.geteuid():
                os.close(descriptor)
                raise OutputError(
                    f"cannot write {path}: {lock_path} belongs to another user, who could remove it while this "
                    "run holds it and let a second run in: have it removed, or write elsewhere"
                )
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(descriptor)
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise OutputError(
                        f"another run is writing {path} (it holds {lock_path}): wait for it to end, or write elsewhere"
                    ) from None
                raise OutputError(f"cannot lock {lock_path}: {exc.strerror or exc}") from None
            # The run before may have finished and removed the file between our open and our lock:
            # then we hold a lock on a file no one else sees, and must lock the one under the name.
            try:
                current = os.stat(lock_path, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_dev, current.st_ino) == (opened.st_dev, opened.st_ino):
                self._descriptor = descriptor
                return
            os.close(descriptor)

    def release(self) -> None:
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is None:
            return
        try:
            # Removed while still held, so that a run waiting on this file retries on a new one.
            current = os.stat(self.lock_path, follow_symlinks=False)
            opened = os.fstat(descriptor)
            # (and only this user's: a lock file another user left is theirs to remove)
            if _identity(current) == _identity(opened) and current.st_uid == os.geteuid():
                os.unlink(self.lock_path)
        except OSError:
            pass  # a lock file left behind is harmless: the next run locks it again
        finally:
            os.close(descriptor)


def _ours(path: str, status: os.stat_result) -> bool:
    """Whether the file at ``path`` (``status``, links followed) and the name itself are this user's."""
    if os.name != "posix":
        return True
    try:
        link = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return status.st_uid == os.geteuid() and link.st_uid == os.geteuid()


def _identity(status: os.stat_result) -> tuple[int, int]:
    return status.st_dev, status.st_ino


_ACL = "system.posix_acl_access"


def _permissions_to_keep(path: str, found: os.stat_result) -> tuple[os.stat_result | None, bytes | None]:
    """The status and access ACL of this user's regular file at ``path`` (``found`` when it was
    looked at), read from one handle; (None, None) when the name or the file is not this user's,
    or is no longer the one found, or has other names; its mode and an unknown ACL (``b""``) when it
    cannot be read.

    A file with another name (a hard link) may be another file of the user's that someone else
    linked here: in /tmp, another user who may write a file the user shares with a group linked it
    at the name of the user's next output, which took its group and mode and became theirs to
    rewrite. The output replaces only this name, so it keeps nothing of that file."""
    if not _ours(path, found) or _other_names(found):
        return None, None
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # a file of one's own one may not read (0200): its mode, its ACL unknown
        return found, b""
    try:
        status = os.fstat(handle)
        if _identity(status) != _identity(found) or not _ours_status(status) or _other_names(status):
            return None, None
        return status, _access_acl(handle)
    finally:
        os.close(handle)


def _other_names(status: os.stat_result) -> bool:
    """Whether the file of ``status`` has names besides the one it was found under (hard links)."""
    return os.name == "posix" and status.st_nlink > 1


def _ours_status(status: os.stat_result) -> bool:
    return os.name != "posix" or (stat.S_ISREG(status.st_mode) and status.st_uid == os.geteuid())


def _access_acl(path: str | int) -> bytes | None:
    """The POSIX access ACL of the file at ``path`` (a name or an open descriptor) as the kernel
    keeps it, None without one, ``b""`` when that cannot be told."""
    getxattr = getattr(os, "getxattr", None)
    if getxattr is None:
        return None
    try:
        acl: bytes = getxattr(path, _ACL)
    except OSError as exc:
        return None if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOENT) else b""
    return acl


def _create(
    directory: str, stem: str, previous: os.stat_result | None = None, acl: bytes | None = None
) -> tuple[str, int]:
    """A new file of this process's own under a random name; never an existing name or a link.

    Replacing ``previous`` (the file at the output's name, this user's), it gets that file's permissions and,
    where this user may give it, its group, as ``cp`` and ``> FILE`` keep them: renamed over a
    private output, a new file of the umask's 0644 let every user read what only its owner could.
    Until then, and where the group cannot be kept, nobody but the owner gets more than before.
    Its access ``acl`` is kept too: the mode's group bits are then the ACL's mask, and alone they
    would give the file's whole group what the ACL gave one user; where it cannot be kept, the
    group gets nothing.
    """
    for _ in range(100):
        temporary = os.path.join(directory, f".{stem}.{secrets.token_hex(4)}{_SUFFIX}")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            # the umask applies, as for any new file; a replacement starts private
            descriptor = os.open(temporary, flags, 0o666 if previous is None else 0o600)
        except FileExistsError:
            continue
        try:
            if previous is not None and os.name == "posix":
                _keep_permissions(descriptor, previous, acl)
        except BaseException:  # a signal or an error here: the file made is removed, not left behind
            os.close(descriptor)
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return temporary, descriptor
    raise OutputError(f"cannot find a free temporary name in {directory}")


def _keep_permissions(descriptor: int, previous: os.stat_result, acl: bytes | None) -> None:
    mode = stat.S_IMODE(previous.st_mode) & 0o777
    try:
        if os.fstat(descriptor).st_gid != previous.st_gid:
            os.fchown(descriptor, -1, previous.st_gid)
    except OSError:
        mode &= ~0o070  # another group than the file had: none of the group's rights
        acl = None
    if acl == b"":
        mode &= ~0o070  # an ACL that cannot be read: none of the group's rights
    os.fchmod(descriptor, mode)
    if acl:
        try:
            os.setxattr(descriptor, _ACL, acl)
        except OSError:
            os.fchmod(descriptor, mode & ~0o070)


def _remove_stale(directory: str, stem: str) -> None:
    """Remove the temporary files a killed run left for this output (we hold its lock: no run is
    writing them). Only regular files of ours whose names are exactly what :func:`_create` makes."""
    if fcntl is None:
        return  # without a lock a live run's file cannot be told from a dead one's
    pattern = re.compile(re.escape(f".{stem}.") + "[0-9a-f]{8}" + re.escape(_SUFFIX))
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not pattern.fullmatch(name):
            continue
        path = os.path.join(directory, name)
        try:
            info = os.stat(path, follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid():
                os.unlink(path)
        except OSError:
            continue


def _sync_directory(directory: str) -> None:
    """Make the rename durable (a crash right after could otherwise bring back the old file)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except (OSError, AttributeError):
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


__all__ = ["OutputError", "OutputFile"]
