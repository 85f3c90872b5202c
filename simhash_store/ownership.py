"""Whether users other than this one may write a file or directory. No database.

Group write alone is not another user's write when the group holds this user alone: with the
user private groups of Debian, Ubuntu and Fedora, ``umask 002`` makes every new directory
group-writable for a group of one, and refusing those would refuse most users' own directories.
A group with any other member, named in the group database or holding it as their primary
group, counts.

>>> import os
>>> writable_by_others(os.stat_result((0o40700, 0, 0, 1, os.geteuid(), os.getegid(), 0, 0, 0, 0)))
False
"""

from __future__ import annotations

import functools
import os
import stat


def writable_by_others(status: os.stat_result) -> bool:
    """Whether another user may write the file or directory of ``status`` through its mode: it
    is writable by every user, or by a group holding anyone but this user."""
    if status.st_mode & stat.S_IWOTH:
        return True
    return bool(status.st_mode & stat.S_IWGRP) and not group_of_one(status.st_gid)


@functools.lru_cache(maxsize=64)
def group_of_one(gid: int) -> bool:
    """Whether the group ``gid`` holds no user but this one (a user private group)."""
    if os.name != "posix":
        return False
    import grp
    import pwd

    try:
        group = grp.getgrgid(gid)
        me = pwd.getpwuid(os.geteuid())
    except KeyError:
        return False  # a group or user the databases do not know: assume others are in it
    if any(member != me.pw_name for member in group.gr_mem):
        return False
    return all(user.pw_gid != gid or user.pw_uid == me.pw_uid for user in pwd.getpwall())
