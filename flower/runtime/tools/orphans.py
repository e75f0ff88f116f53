"""Commands a killed flower left running: recorded while they run, killed by the next run.

Bash runs each command in its own process group and kills the group on a timeout, on
Ctrl-C, SIGTERM and SIGHUP. SIGKILL gives flower no such chance: the group lives on,
still writing in the workspace, while the next flower resumes the conversation and the
model runs the command again next to it. So while a command runs, a small record of its
group and of the flower process that started it sits in ``<run_dir>/running/``; a run
that starts kills what is left of every group whose flower is gone.

Processes are told apart by pid *and* start time (``/proc/<pid>/stat``), so a pid the
system has since given to another process is never killed. Without ``/proc`` (not
Linux) nothing is recorded and nothing is killed.

The group's id exists only once the command has started, so its record is written just
after. To cover that moment too, a command is *announced* first: a ``spawning-<token>``
record names a token that the command's environment carries (:data:`SPAWN_VARIABLE`).
A flower killed between the start and the record leaves that announcement, and the next
run kills the groups of the processes whose environment holds its token.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import uuid
from pathlib import Path

import msgspec

from flower.core.fileperms import private_dir, replaced_atomically

_PROC = Path("/proc")
SPAWN_VARIABLE = "FLOWER_BASH_SPAWN"
"""Set in a command's environment to the token of its announcement."""
_SPAWNING = "spawning-"


class RunningCommand(msgspec.Struct, forbid_unknown_fields=False):
    """One command's process group and the flower process that started it."""

    group: int  # the process group id: bash's pid, its leader
    group_started: int  # the leader's start time, in clock ticks since boot
    owner: int  # the flower process
    owner_started: int
    command: str


def _stat_fields(stat: Path) -> list[bytes] | None:
    """The fields of a ``/proc/<pid>/stat`` after the name (field 3 on: state, ppid,
    process group, ...); ``None`` when the process is gone or the line is not readable."""
    try:
        line = stat.read_bytes()
    except OSError:
        return None
    # field 2 (the name, in parentheses) may hold spaces: count fields after its ")"
    return line[line.rfind(b")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot); ``None`` if there is none."""
    fields = _stat_fields(_PROC / str(pid) / "stat")
    try:
        return int(fields[19]) if fields is not None else None  # field 22 of the line
    except (IndexError, ValueError):
        return None


@functools.cache
def _own_start_time(pid: int) -> int | None:
    """This process's start time: read once (keyed by pid, so a forked child reads its own)."""
    return start_time(pid)


def group_alive(group: int) -> bool:
    """Whether any process of ``group`` still runs (a zombie waiting for its parent to
    collect it does not)."""
    wanted = str(group).encode()
    for stat in _PROC.glob("[0-9]*/stat"):
        fields = _stat_fields(stat)
        if fields and len(fields) > 2 and fields[2] == wanted and fields[0] != b"Z":
            return True
    return False


def _alive(pid: int, started: int) -> bool:
    return start_time(pid) == started


def record(ledger: Path | None, group: int, command: str) -> Path | None:
    """Write down that ``group`` runs ``command`` for this process; the record's path,
    or ``None`` when there is nowhere to write it (no ledger, no ``/proc``, a read-only
    run directory: the command runs anyway)."""
    if ledger is None:
        return None
    owner, owner_started = os.getpid(), _own_start_time(os.getpid())
    group_started = start_time(group)
    if owner_started is None or group_started is None:
        return None
    entry = RunningCommand(group, group_started, owner, owner_started, command[:500])
    return _write(ledger / f"{group}.json", entry)


def _write(path: Path, entry: msgspec.Struct) -> Path | None:
    """``entry`` at ``path`` in the ledger, whole or not at all; ``None`` if it can't be."""
    try:
        private_dir(path.parent)
        with replaced_atomically(path, durable=False) as handle:
            handle.write(msgspec.json.encode(entry))
    except OSError:
        return None
    return path


class SpawningCommand(msgspec.Struct, forbid_unknown_fields=False):
    """A command about to start: the token its environment carries, and its flower."""

    token: str
    owner: int
    owner_started: int
    command: str


def announce(ledger: Path | None, command: str) -> tuple[str, Path] | None:
    """Before ``command`` starts: write down the token its environment will carry
    (``SPAWN_VARIABLE``); the token and the announcement's path, or ``None`` when there
    is nowhere to write it (as for :func:`record`)."""
    if ledger is None:
        return None
    owner, owner_started = os.getpid(), _own_start_time(os.getpid())
    if owner_started is None:
        return None
    token = uuid.uuid4().hex
    entry = SpawningCommand(token, owner, owner_started, command[:500])
    path = _write(ledger / f"{_SPAWNING}{token}.json", entry)
    return None if path is None else (token, path)


def groups_carrying(token: str) -> set[int]:
    """The process groups of every process whose environment carries ``token``."""
    marker = f"{SPAWN_VARIABLE}={token}".encode()
    own = os.getpgrp()
    groups: set[int] = set()
    for environ in _PROC.glob("[0-9]*/environ"):
        try:
            if marker not in environ.read_bytes().split(b"\0"):
                continue
            group = int((_stat_fields(environ.parent / "stat") or [])[2])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile, or not ours to read
        if group > 1 and group != own:
            groups.add(group)
    return groups


def forget(path: Path | None) -> None:
    """The command ended and its group was dealt with: drop its record."""
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def reap(ledger: Path) -> list[str]:
    """Kill the process groups whose flower is gone; the commands that were still
    running, one per group (a flower killed just after it recorded a group, before it
    dropped the announcement, left both). Records of a live flower are left alone;
    others are removed."""
    try:
        paths = sorted(ledger.glob("[0-9]*.json"))
        announced = sorted(ledger.glob(f"{_SPAWNING}*.json"))
    except OSError:
        return []
    killed: dict[int, str] = {}
    for path in announced:
        for group, command in _reap_announced(path).items():
            killed.setdefault(group, command)
    for path in paths:
        try:
            entry = msgspec.json.decode(path.read_bytes(), type=RunningCommand)
        except FileNotFoundError:
            continue  # its flower finished the command meanwhile
        except (OSError, msgspec.DecodeError):
            forget(path)  # not a record flower wrote whole: nothing to act on
            continue
        if _alive(entry.owner, entry.owner_started):
            continue  # its flower still runs it (another run sharing this run dir)
        if _kill_group(entry):
            killed.setdefault(entry.group, entry.command)
        forget(path)
    return list(killed.values())


def _reap_announced(path: Path) -> dict[int, str]:
    """Kill the groups carrying the token of an announcement whose flower is gone; each
    group killed, with the command."""
    try:
        entry = msgspec.json.decode(path.read_bytes(), type=SpawningCommand)
    except FileNotFoundError:
        return {}
    except (OSError, msgspec.DecodeError):
        forget(path)
        return {}
    if _alive(entry.owner, entry.owner_started):
        return {}
    killed: dict[int, str] = {}
    for group in groups_carrying(entry.token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
            killed[group] = entry.command
    forget(path)
    return killed


def _kill_group(entry: RunningCommand) -> bool:
    """SIGKILL the group if it is still the one recorded; whether anything was killed."""
    leader = start_time(entry.group)
    if leader is not None and leader != entry.group_started:
        return False  # the pid now belongs to an unrelated process
    # With the leader gone, a live group of that id is the recorded one, unless a process
    # took the pid since, led a group of its own and died: too unlikely to spare an orphan.
    try:
        os.killpg(entry.group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True
