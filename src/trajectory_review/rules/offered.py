"""The candidate profiles the What if tab offers, and reading one by its key.

The browser names a profile by a key from this list and nothing else: the server looks
the key up and reads that file. A select whose value was a path let any browser read any
file on the machine as a candidate (`/etc/passwd`, `../` out of the folder), learn from
the error which paths exist, or block the server on a FIFO. So only regular files
directly in the rules folder are offered (never a symlink, which could lead out of it),
each opened without following links or waiting on a pipe, at most MAX_PROFILE_BYTES,
and an error names only the profile as it was listed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from trajectory_review.rules.registry import RulesError, profile_path

MAX_PROFILE_BYTES = 200_000  # a profile's size, read or pasted
MAX_OFFERED = 100  # profiles listed from the folder
SHIPPED = ("default", "copilotkit")


@dataclass(frozen=True)
class Offered:
    key: str  # what the browser sends back
    label: str  # what the reviewer sees, and all an error names
    path: Path


def offered_profiles(folder: Path | None) -> dict[str, Offered]:
    """The shipped profiles, then the `*.toml` regular files of the deployment's rules
    folder (TRAJECTORY_RULES_DIR), by key."""
    out = {
        f"shipped:{n}": Offered(f"shipped:{n}", f"shipped: {n}", profile_path(n)) for n in SHIPPED
    }
    if folder is None:
        return out
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return out
    listed = 0
    for entry in entries:
        if listed >= MAX_OFFERED:
            break
        try:
            regular = entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        if entry.name.endswith(".toml") and regular:
            out[f"folder:{entry.name}"] = Offered(
                f"folder:{entry.name}", entry.name, Path(folder) / entry.name
            )
            listed += 1
    return out


def read_offered(item: Offered) -> str:
    """The profile's text; RulesError naming only its label when it cannot be used."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(item.path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        raise RulesError(f"{item.label}: cannot be read") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RulesError(f"{item.label}: not a regular file")
        data = b""
        while len(data) <= MAX_PROFILE_BYTES and (chunk := os.read(fd, 65_536)):
            data += chunk
    except OSError:
        raise RulesError(f"{item.label}: cannot be read") from None
    finally:
        os.close(fd)
    if len(data) > MAX_PROFILE_BYTES:
        raise RulesError(f"{item.label}: over {MAX_PROFILE_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RulesError(f"{item.label}: not UTF-8 text") from None
