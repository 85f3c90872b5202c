"""Whether users other than this one may write a file or directory. No database.

Group write alone is not another user's write when the group holds this user alone: with the
user private groups of Debian, Ubuntu and Fedora, ``umask 002`` makes every new directory
group-writable for a group of one, and refusing those would refuse most users' own directories.
A group with any other member, named in the group database or holding it as their primary
group, counts. So does an access ACL: the mode's group bits are then its mask, the most that any
user or group the ACL names may do, so ``setfacl -m u:other:rwx`` shows as group write alone.

>>> import os
>>> writable_by_others(os.stat_result((0o40700, 0, 0, 1, os.geteuid(), os.getegid(), 0, 0, 0, 0)), "/")
False
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from pathlib import Path
from typing import Any

# The extended attributes that hold an access ACL: POSIX ACLs, and NFSv4 ACLs as Linux shows them.
_ACCESS_ACLS = ("system.posix_acl_access", "system.nfs4_acl")


def writable_by_others(status: os.stat_result, where: int | str | os.PathLike[str]) -> bool:
    """Whether another user may write the file or directory of ``status`` (found at ``where``, a
    path or an open descriptor) through its mode: it is writable by every user, or by its group,
    unless that group holds this user alone and no ACL names anyone else."""
    if status.st_mode & stat.S_IWOTH:
        return True
    return group_may_be_others(status, where)


def group_may_be_others(status: os.stat_result, where: int | str | os.PathLike[str]) -> bool:
    """Whether the group write bit of ``status`` (found at ``where``) lets anyone but this user
    write: it is set, and the group holds another user, or the file has an access ACL (whose
    named users and groups that bit, the ACL's mask, lets write), or that cannot be told."""
    if not status.st_mode & stat.S_IWGRP:
        return False
    return not group_of_one(status.st_gid) or _access_acl(where)


def _access_acl(where: int | str | os.PathLike[str]) -> bool:
    """Whether the file at ``where`` has an access ACL, or it cannot be told."""
    listxattr = getattr(os, "listxattr", None)
    if listxattr is None:
        return True  # not Linux: ACLs cannot be read here, so assume one names another user
    try:
        names = listxattr(where)
    except OSError as exc:
        return exc.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP)  # no extended attributes: no ACL
    return any(name in _ACCESS_ACLS for name in names)


@functools.lru_cache(maxsize=64)
def group_of_one(gid: int) -> bool:
    """Whether the group ``gid`` holds this user and no other (a user private group). A group
    this user is not in does not count even when it lists no one (``tty``, ``staff``, ``users``
    on many systems): processes get it without being listed, from setgid programs, from services
    started with it, or from user databases that cannot be listed whole."""
    if os.name != "posix":
        return False
    import grp
    import pwd

    if gid != os.getegid() and gid not in os.getgroups():
        return False  # a group that lists no one holds whoever is given it: setgid programs, services
    try:
        group = grp.getgrgid(gid)
        me = pwd.getpwuid(os.geteuid())
    except KeyError:
        return False  # a group or user the databases do not know: assume others are in it
    if any(member != me.pw_name for member in group.gr_mem):
        return False
    return all(user.pw_gid != gid or user.pw_uid == me.pw_uid for user in pwd.getpwall())


def replaceable_by_others(directory: Path, *, itself: bool = False) -> str | None:
    """Why another user could make ``directory`` name a directory of theirs, or (``itself``) put
    files of theirs in it, or None.

    Every component of the path as given, and of the path it resolves to, must belong to this
    user or root: a symbolic link of another user's (in /tmp where links are followed) can be
    pointed elsewhere later, and so can any entry of a directory others may write without the
    sticky bit (they rename ours away and put theirs in its place)."""

    me = os.geteuid()
    for given in (directory, Path(os.path.realpath(directory))):
        for component in (*reversed(given.parents), given):
            try:
                status = os.lstat(component)
            except OSError as exc:
                return f"{component} cannot be checked ({exc.strerror})"
            if status.st_uid not in (0, me):
                return f"{component} belongs to another user"
            if stat.S_ISLNK(status.st_mode) or (component == given and not itself):
                continue  # a link's mode means nothing; the directory itself is checked by the caller
            if writable_by_others(status, component) and not status.st_mode & stat.S_ISVTX:
                return f"{component} may be written by other users without the sticky bit"
    return links_replaceable(directory)  # and the links between the two


def links_on(path: Path, depth: int = 0) -> list[Path]:
    """Every symbolic link met resolving ``path``, each hop of a link to a link included (the
    path as given and the path it resolves to hold only the first and the last)."""

    met: list[Path] = []
    current = Path(path.absolute().anchor)
    for part in path.absolute().parts[1:]:
        candidate = current / part
        if os.path.islink(candidate):
            met.append(candidate)
            if depth < 40:
                met.extend(links_on(current / os.readlink(candidate), depth + 1))
            current = Path(os.path.realpath(candidate))
        else:
            current = candidate
    return met


def links_replaceable(path: Path) -> str | None:
    """Why another user could repoint a link met resolving ``path`` (it is theirs, or sits in a
    directory they own, or may write without the sticky bit), or None."""

    for link in links_on(path):
        try:
            status, folder = os.lstat(link), os.stat(link.parent)
        except OSError as exc:
            return f"{link} cannot be checked ({exc.strerror})"
        if status.st_uid not in (0, os.geteuid()):
            return f"{link} is a link of another user's"
        if folder.st_uid not in (0, os.geteuid()):  # the sticky bit does not hold its owner back
            return f"{link.parent} belongs to another user"
        if writable_by_others(folder, link.parent) and not folder.st_mode & stat.S_ISVTX:
            return f"{link.parent} may be written by other users without the sticky bit"
    return None


def make_directories(path: Path, mode: int = 0o700) -> None:
    """``path.mkdir(mode, parents=True, exist_ok=True)``, with every missing parent made with ``mode``
    too (under the umask), as the XDG base directory specification asks of the directories it names.

    Python (as ``mkdir -p``) makes missing parents with the umask's mode alone: under ``umask 000``
    (some containers and shared setups) the store's first command made ``~/.local`` and
    ``~/.local/share`` writable by every user, where another user could put ``~/.local/bin`` (on the
    PATH of Debian's and Ubuntu's login shells) with programs of theirs, and then refused the data
    directory below them as one another user could move away."""
    path = Path(path)
    try:
        os.mkdir(path, mode)
    except FileNotFoundError:
        if path.parent == path:
            raise
        make_directories(path.parent, mode)
        make_directories(path, mode)
    except FileExistsError:
        if not path.is_dir():
            raise


def tcp_sockets() -> list[tuple[tuple[Any, int], tuple[Any, int], str, int]]:
    """(local address and port, remote address and port, state, owner's uid) of every TCP socket in
    this network namespace, from /proc/net/tcp and tcp6 (none where there is no /proc), with
    IPv4-mapped IPv6 addresses as IPv4 ones. States as the kernel writes them: ``0A`` listening,
    ``01`` established, ``03`` a connection being accepted."""
    import ipaddress

    def endpoint(field: str) -> tuple[Any, int]:
        raw_address, _, raw_port = field.rpartition(":")
        raw = bytes.fromhex(raw_address)
        # Each 32-bit word in the kernel's byte order (little-endian here).
        ip = ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
        return getattr(ip, "ipv4_mapped", None) or ip, int(raw_port, 16)

    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as listing:
                rows = listing.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) >= 8:
                found.append((endpoint(fields[1]), endpoint(fields[2]), fields[3], int(fields[7])))
    return found


def plantable(directory: str) -> str | None:
    """Why another user could put a file of theirs in ``directory``, or make it (and so the files
    in it) theirs where it does not exist yet, or None.

    The path is resolved as the kernel resolves it, each link and ``..`` in turn: every directory
    reached must belong to this user or root and be one others may not write (the sticky bit keeps
    others from renaming entries, not from making new ones), as long as the next name is missing;
    a link met must be this user's or root's, in a directory others may not repoint it in."""

    me = os.geteuid()
    current = Path("/")
    parts = list(Path(directory).absolute().parts[1:])
    hops = 0
    while True:
        try:
            status = os.stat(current)
        except OSError:
            return None  # the loader cannot reach it either
        if status.st_uid not in (0, me):
            return f"{current} belongs to another user"
        open_to_others = writable_by_others(status, current)
        if not parts:
            return f"{current} may be written by other users" if open_to_others else None
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        try:
            found = os.lstat(candidate)
        except FileNotFoundError:
            return f"{current} may be written by other users, who may make {candidate}" if open_to_others else None
        except OSError:
            return None
        if open_to_others and not status.st_mode & stat.S_ISVTX:
            return f"{current} may be written by other users without the sticky bit"
        if stat.S_ISLNK(found.st_mode):
            if found.st_uid not in (0, me):
                return f"{candidate} is a link of another user's"
            hops += 1
            if hops > 40:
                return None  # too many links: the loader finds nothing there
            target = Path(os.readlink(candidate))
            if target.is_absolute():
                current = Path("/")
            parts = [*target.parts[1 if target.is_absolute() else 0 :], *parts]
            continue
        if not stat.S_ISDIR(found.st_mode):
            return None  # not a directory: nothing is found below it
        current = candidate
