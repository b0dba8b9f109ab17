"""Codex's record of trusted hooks in `config.toml`: the key and hash of a handler, and the edits
that add or remove such records while keeping everything else in the file as it was.

Contract (measured on Codex 0.147.0 and 0.171.0; docs/codex-integration.md):
- Codex runs a hook handler from `hooks.json` that is not managed by an administrator only when
  `config.toml` holds `[hooks.state."<hooks.json path>:<event in snake_case>:<group index>:<handler
  index>"]` with `trusted_hash = "sha256:<hex>"`, the hex being SHA-256 over the compact,
  key-sorted JSON of `{"event_name", "matcher" (only when the group has one), "hooks": [<the
  handler as declared, with "async": false unless it says otherwise>]}` (our handlers always
  declare their timeout; what Codex fills in for a handler without one was not measured). `codex exec` skips any other
  handler silently; the TUI asks. `trust_key` and `trust_hash` compute both.
- Codex spells the hooks.json path from `CODEX_HOME` with symlinks resolved, or from
  `~/.codex` as is; `hooks_file_spellings` gives every spelling, and a record is written under each.
- `read_config(path)` parses `config.toml` with tomlkit (a missing file is an empty document; a
  file that is not TOML is a `CodexConfigError`, nothing written); `set_trust` and `remove_trust`
  edit that document in place and return whether they changed it; `render_config` gives the text
  to write, with the file's comments, order, formatting and trailing newlines kept: a record
  added and removed again leaves the file as it was. Only `trusted_hash` keys are touched: any
  other key Codex keeps in a record stays, and a table left empty by a removal goes.
- `trust_state(document, entry)`: `trusted`, `untrusted`, or `outdated` (trusted for another
  version of the handler); `recorded_trust(document, hooks_files)` lists the records of one
  hooks.json (the hash says whose handler a record trusted: it covers the handler, not its place).
- Pure down to here: no file is read or written except by `read_config`.
- Our handlers: `our_trust_entries(hooks_file, document)` are the records that make Codex run the
  handlers of ours a hooks.json document holds; `edit_trust` (install with `--trust`, uninstall)
  records them and drops every record of one of ours that moved or changed, nobody else's,
  backed up and written atomically (a dry run shows the diff); `handler_trust_states` is what
  `doctor` and `install` read.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from codex_memories import paths
from codex_memories.codex.changes import ChangeReport, CodexHomeError, backup_file
from codex_memories.codex.hooks_file import hooks_path, our_handlers
from codex_memories.local_files import write_text_atomically

TRUSTED_HASH_KEY = "trusted_hash"
HASH_PREFIX = "sha256:"
_CAMEL_BOUNDARY = re.compile(r"(?<!^)(?=[A-Z])")


class CodexConfigError(ValueError):
    """`config.toml` cannot be read or edited (not TOML, or `hooks` / `hooks.state` not tables)."""


class TrustState(StrEnum):
    trusted = "trusted"
    untrusted = "not trusted"
    outdated = "trusted for an older version of the handler"


@dataclass(frozen=True)
class TrustEntry:
    key: str
    trusted_hash: str


def event_snake_case(event: str) -> str:
    """`SessionStart` -> `session_start`, as Codex writes the event in a trust key."""
    return _CAMEL_BOUNDARY.sub("_", event).lower()


def trust_key(hooks_file: Path | str, event: str, group_index: int, handler_index: int) -> str:
    return f"{hooks_file}:{event_snake_case(event)}:{group_index}:{handler_index}"


def trust_hash(event: str, matcher: str | None, handler: dict[str, Any]) -> str:
    """Codex's hash of one command handler as `hooks.json` declares it."""
    normalised = {"async": False, **handler}
    identity: dict[str, Any] = {"event_name": event_snake_case(event), "hooks": [normalised]}
    if matcher is not None:
        identity["matcher"] = matcher
    encoded = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return HASH_PREFIX + hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def hooks_file_spellings(hooks_file: Path) -> list[Path]:
    """The hooks.json path as given (absolute) and with symlinks resolved, when they differ."""
    given = Path(hooks_file).absolute()
    resolved = given.resolve()
    return [given] if resolved == given else [given, resolved]


# -- config.toml ----------------------------------------------------------------------------------


def read_config(path: Path) -> tomlkit.TOMLDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except (OSError, UnicodeDecodeError) as error:
        raise CodexConfigError(f"cannot read {path}: {error}") from error
    try:
        return tomlkit.parse(text)
    except TOMLKitError as error:
        raise CodexConfigError(f"{path} is not valid TOML ({error}); fix or move it, nothing was changed") from error


def render_config(document: tomlkit.TOMLDocument, before_text: str) -> str:
    """The document's text, ending in as many newlines as `before_text` did (tomlkit leaves a
    blank line behind where it removed a trailing table)."""
    text = tomlkit.dumps(document)
    if not before_text:
        return text
    trailing = len(before_text) - len(before_text.rstrip("\n"))
    return text.rstrip("\n") + "\n" * trailing


def _state_table(document: tomlkit.TOMLDocument, create: bool) -> Table | None:
    hooks = document.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = tomlkit.table(is_super_table=True)
        document["hooks"] = hooks
    if not isinstance(hooks, Table):
        raise CodexConfigError("config.toml: `hooks` is not a table; nothing was changed")
    state = hooks.get("state")
    if state is None:
        if not create:
            return None
        state = tomlkit.table(is_super_table=True)
        hooks["state"] = state
    if not isinstance(state, Table):
        raise CodexConfigError("config.toml: `hooks.state` is not a table; nothing was changed")
    return state


def set_trust(document: tomlkit.TOMLDocument, entries: Iterable[TrustEntry]) -> bool:
    """Record each entry's hash under its key (other keys of the record stay)."""
    changed = False
    for entry in entries:
        state = _state_table(document, create=True)
        assert state is not None  # create=True
        record = state.get(entry.key)
        if isinstance(record, Table) and record.get(TRUSTED_HASH_KEY) == entry.trusted_hash:
            continue
        if record is None:
            record = tomlkit.table()
            state[entry.key] = record
        elif not isinstance(record, Table):
            raise CodexConfigError(f"config.toml: hooks.state.{json.dumps(entry.key)} is not a table; nothing was changed")
        record[TRUSTED_HASH_KEY] = entry.trusted_hash
        changed = True
    return changed


def remove_trust(document: tomlkit.TOMLDocument, entries: Iterable[TrustEntry]) -> bool:
    """Drop each entry's `trusted_hash` when it is exactly that hash; a record, `hooks.state` or
    `hooks` table left empty goes too."""
    state = _state_table(document, create=False)
    if state is None:
        return False
    changed = False
    for entry in entries:
        record = state.get(entry.key)
        if not isinstance(record, Table) or record.get(TRUSTED_HASH_KEY) != entry.trusted_hash:
            continue
        del record[TRUSTED_HASH_KEY]
        if not record:
            del state[entry.key]
        changed = True
    if changed and not state:
        hooks = document["hooks"]
        del hooks["state"]
        if not hooks:
            del document["hooks"]
    return changed


def recorded_trust(document: tomlkit.TOMLDocument, hooks_files: Iterable[Path]) -> list[TrustEntry]:
    """Every trust record of a handler in one of `hooks_files` (any event, any position)."""
    state = _state_table(document, create=False)
    if state is None:
        return []
    prefixes = tuple(f"{hooks_file}:" for hooks_file in hooks_files)
    return [
        TrustEntry(str(key), str(record[TRUSTED_HASH_KEY]))
        for key, record in state.items()
        if str(key).startswith(prefixes) and isinstance(record, Table) and isinstance(record.get(TRUSTED_HASH_KEY), str)
    ]


def trust_state(document: tomlkit.TOMLDocument, entry: TrustEntry) -> TrustState:
    state = _state_table(document, create=False)
    record = state.get(entry.key) if state is not None else None
    recorded = record.get(TRUSTED_HASH_KEY) if isinstance(record, Table) else None
    if recorded is None:
        return TrustState.untrusted
    return TrustState.trusted if recorded == entry.trusted_hash else TrustState.outdated


# -- our handlers' trust: recorded or removed by install and uninstall, read by doctor ---------------

TRUST_COMMAND = "codex-memories install --trust"
TRUST_HINT = (
    f"`codex exec` skips these hooks until they are trusted, silently: run `{TRUST_COMMAND}` "
    "(it records Codex's trust for exactly our hooks in config.toml), or answer \"Trust all and continue\" "
    "once on the \"Hooks need review\" screen of the `codex` TUI."
)


def our_trust_entries(hooks_file: Path, document: dict[str, Any] | None) -> list[TrustEntry]:
    """The trust records that make Codex run our handlers of `document`, under every spelling of
    the hooks.json path."""
    return [
        TrustEntry(trust_key(spelling, event, group_index, handler_index), trust_hash(event, matcher, handler))
        for event, group_index, handler_index, matcher, handler in our_handlers(document)
        for spelling in hooks_file_spellings(hooks_file)
    ]


def edit_trust(
    codex_home: Path, report: ChangeReport, what: str, *, add: list[TrustEntry], remove_ours_of: list[dict[str, Any] | None]
) -> None:
    """Record `add` in config.toml and drop every other record that trusts one of our handlers of
    the `remove_ours_of` hooks.json documents (same event, same hash: at a place it no longer
    holds, or an older version); backed up, written atomically; a dry run shows the diff instead."""
    path = Path(codex_home) / paths.CODEX_CONFIG_FILE
    hooks_file = hooks_path(codex_home)
    our_hashes = {(_event_of(entry.key), entry.trusted_hash) for document in remove_ours_of for entry in our_trust_entries(hooks_file, document)}
    try:
        before_text = path.read_text(encoding="utf-8") if path.exists() else ""
        document = read_config(path)
        recorded = recorded_trust(document, hooks_file_spellings(hooks_file))
        stale = [entry for entry in recorded if (_event_of(entry.key), entry.trusted_hash) in our_hashes and entry not in add]
        changed = remove_trust(document, stale)
        changed = set_trust(document, add) or changed
    except (CodexConfigError, OSError, UnicodeDecodeError) as error:
        raise CodexHomeError(str(error)) from error
    if not changed:
        return
    after_text = render_config(document, before_text)
    report.changes.append(what)
    if report.dry_run:
        diff = difflib.unified_diff(before_text.splitlines(), after_text.splitlines(), str(path), f"{path} (after)", lineterm="")
        report.notes.append("\n".join(diff))
        return
    if path.exists():
        report.config_backup = backup_file(path)
        report.notes.append(f"the previous {path.name} is kept as {report.config_backup}")
    write_text_atomically(path, after_text)


def _event_of(key: str) -> str:
    """The event (snake_case) of a trust key `<hooks.json>:<event>:<group>:<handler>`."""
    return key.rsplit(":", 3)[1]


def handler_trust_states(codex_home: Path, entries: list[TrustEntry]) -> dict[str, TrustState]:
    """`<event>:<group>:<handler>` -> that handler's trust: trusted under any spelling of the
    hooks.json path, else outdated under any, else untrusted. A config.toml that is not TOML
    trusts nothing."""
    try:
        document = read_config(Path(codex_home) / paths.CODEX_CONFIG_FILE)
    except CodexConfigError:
        document = None
    states: dict[str, TrustState] = {}
    for entry in entries:
        position = ":".join(entry.key.rsplit(":", 3)[1:])
        state = trust_state(document, entry) if document is not None else TrustState.untrusted
        known = states.get(position)
        if known is None or _TRUST_RANK[state] < _TRUST_RANK[known]:
            states[position] = state
    return states


_TRUST_RANK = {TrustState.trusted: 0, TrustState.outdated: 1, TrustState.untrusted: 2}
