"""The memory folder's forget ledger: what was forgotten, kept where every run into that folder
finds it (issue 36, item 4).

Why: the state DB alone remembered that a thread, a project or a text was forgotten, so a run
with a fresh DB (a typo in its path, a new machine) re-extracted every session into the live
folder and brought the forgotten memories back. The ledger lives in the folder itself,
`<root>/.codex-memories/forgotten.json` (bookkeeping: never diffed, consolidated, counted or
served), for a local folder and an object-store root alike (through `MemoryRoot`).

What it holds, and why hashes: the ledger must not become a list of what the user wanted gone.
Every entry is a keyed BLAKE2b hash (key: a random per-folder salt stored beside the entries), so
reading the file tells nobody the thread ids, project keys or texts; a guess can still be
checked by whoever reads the folder (a short code name is guessable: the hash hides the text from
a glance and a leak, not from a dictionary of candidates held by someone who already reads the
memory folder).
- `threads`: hash of a thread id (`forget --thread`, and every thread of a forgotten project);
- `projects`: hash of a project key (`forget --project`); `folders`: hash of the project's folder
  on the machine that forgot it (threads without a git origin are keyed by their folder);
- `texts`: for `forget --match`, the hash of the case-folded text with its length, and the hash
  of its letters and digits (the name form, `text_edit.name_letters`) with its length. A line is
  tested by hashing each window of that length (`ForgottenText`), which gives exactly the
  matching `text_edit.Needle` gives with the text in hand.

Contract:
- `ForgetLedger.load(root)` reads it (an empty ledger when absent); a file that is not a ledger is
  `LedgerUnreadable` (refused, never overwritten: it may be the only record of a forget).
- `ledger.add_threads(...)`, `add_project(...)`, `add_text(...)` then `ledger.save(root)`: one
  atomic write (`MemoryRoot.write_bytes`). Entries are only ever added; adding one already there
  changes nothing. A forget writes the ledger BEFORE its DB and folder changes: a forget that
  fails after it is completed by the next run honouring the ledger; one that fails on it (a
  read-only folder) has changed nothing.
- `forget.honour.honour_ledger(store, ledger)` applies it to a state DB (phase 1).
- `ledger.honoured(selection)` (with `drops_output`, `scrub`, `scrub_slug`): phase 2's
  render-time filter (`consolidate.steps.sync_inputs`), so a DB that was not honoured still
  cannot write a forgotten memory into `raw_memories.md` or `rollout_summaries/`.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from codex_memories import paths
from codex_memories.forget.text_edit import MIN_NAME_MATCH_CHARACTERS, TextTest, edit_lines, name_letters
from codex_memories.raw_memories import sanitize_slug
from codex_memories.scopes import project_key
from codex_memories.state.records import Stage1Output
from codex_memories.storage import FORGET_LEDGER_PATH, MemoryRoot

LEDGER_PATH = FORGET_LEDGER_PATH
LEDGER_FORMAT = "codex-memories forget ledger"
LEDGER_VERSION = 1
FROM_LEDGER = "forgotten earlier: the memory folder's forget ledger names it"
_DIGEST_BYTES = 16


class LedgerUnreadable(ValueError):
    """The ledger file is there but is not a ledger this version can read."""


def _digest(salt: bytes, kind: str, value: str) -> str:
    return hashlib.blake2b(f"{kind}\0{value}".encode("utf-8", "surrogatepass"), key=salt, digest_size=_DIGEST_BYTES).hexdigest()


@dataclass(frozen=True)
class ForgottenText(TextTest):
    """A forgotten text known by its hashes: tests lines and names as `Needle` does."""

    salt: bytes
    line_length: int
    line_hash: str
    name_length: int
    name_hash: str | None

    def _windows(self, text: str, length: int, kind: str, wanted: str | None) -> list[int]:
        if wanted is None or length <= 0 or length > len(text):
            return []
        return [start for start in range(len(text) - length + 1) if _digest(self.salt, kind, text[start:start + length]) == wanted]

    def _occurs_in(self, folded: str) -> bool:
        return bool(self._windows(folded, self.line_length, "text", self.line_hash))

    @property
    def _name_length(self) -> int:
        return self.name_length if self.name_hash is not None else 0

    def _name_starts(self, letters: str) -> list[int]:
        return self._windows(letters, self.name_length, "name", self.name_hash)

    def to_json(self) -> dict[str, Any]:
        return {"line": {"length": self.line_length, "hash": self.line_hash}, "name": {"length": self.name_length, "hash": self.name_hash}}


@dataclass
class ForgetLedger:
    """The folder's forget ledger (see the module contract)."""

    salt: bytes = field(default_factory=lambda: secrets.token_bytes(16))
    threads: set[str] = field(default_factory=set)
    projects: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    texts: list[ForgottenText] = field(default_factory=list)

    # ---- reading and writing -----------------------------------------------------------------

    @classmethod
    def load(cls, root: MemoryRoot) -> ForgetLedger:
        if not root.is_file(LEDGER_PATH):
            return cls()
        where = f"{root.url}/{LEDGER_PATH}"
        try:
            data = json.loads(root.read_bytes(LEDGER_PATH).decode("utf-8"))
            if data.get("format") != LEDGER_FORMAT or data.get("version") != LEDGER_VERSION:
                raise LedgerUnreadable(f"{where} is not a forget ledger of version {LEDGER_VERSION}; move it away only if you know what it holds")
            salt = bytes.fromhex(data["salt"])
            texts = [
                ForgottenText(
                    salt=salt, line_length=int(entry["line"]["length"]), line_hash=str(entry["line"]["hash"]),
                    name_length=int(entry["name"]["length"]), name_hash=entry["name"]["hash"],
                )
                for entry in data.get("texts", [])
            ]
            return cls(
                salt=salt, threads=set(data.get("threads", [])), projects=set(data.get("projects", [])),
                folders=set(data.get("folders", [])), texts=texts,
            )
        except LedgerUnreadable:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise LedgerUnreadable(f"{where} cannot be read as a forget ledger ({error}); it is kept as it is") from None

    def save(self, root: MemoryRoot) -> None:
        document = {
            "format": LEDGER_FORMAT,
            "version": LEDGER_VERSION,
            "why": "what was forgotten in this memory folder, as keyed hashes: every run honours it, whatever its state DB",
            "salt": self.salt.hex(),
            "threads": sorted(self.threads),
            "projects": sorted(self.projects),
            "folders": sorted(self.folders),
            "texts": [text.to_json() for text in self.texts],
        }
        root.makedirs(paths.WORKSPACE_STATE_DIR)
        root.write_bytes(LEDGER_PATH, (json.dumps(document, indent=1) + "\n").encode("utf-8"))

    @property
    def empty(self) -> bool:
        return not (self.threads or self.projects or self.folders or self.texts)

    def counts(self) -> dict[str, int]:
        return {"threads": len(self.threads), "projects": len(self.projects), "folders": len(self.folders), "texts": len(self.texts)}

    # ---- adding --------------------------------------------------------------------------

    def add_threads(self, thread_ids: Iterable[str]) -> None:
        self.threads.update(_digest(self.salt, "thread", thread_id) for thread_id in thread_ids)

    def add_project(self, key: str, folder: str | None) -> None:
        self.projects.add(_digest(self.salt, "project", key))
        if folder:
            self.folders.add(_digest(self.salt, "folder", folder.rstrip("/") or "/"))

    def add_text(self, text: str) -> None:
        forgotten = self.forgotten_text(text)
        if forgotten not in self.texts:
            self.texts.append(forgotten)

    def forgotten_text(self, text: str) -> ForgottenText:
        folded, letters = text.casefold(), name_letters(text)
        named = len(letters) >= MIN_NAME_MATCH_CHARACTERS
        return ForgottenText(
            salt=self.salt, line_length=len(folded), line_hash=_digest(self.salt, "text", folded),
            name_length=len(letters) if named else 0, name_hash=_digest(self.salt, "name", letters) if named else None,
        )

    # ---- testing ---------------------------------------------------------------------------

    def names_thread(self, thread_id: str, cwd: str | None, git_origin_url: str | None) -> bool:
        """The thread was forgotten by id, or belongs to a forgotten project (as
        `MemoryStore.threads_for_project` decides: its project key, or its folder or a parent
        of it when it has no git origin)."""
        key = project_key(git_origin_url=git_origin_url, cwd=cwd) if (self.projects or self.folders) else None
        by_folder = git_origin_url is None or project_key(git_origin_url=git_origin_url) is None
        return self._names(thread_id, key, cwd if by_folder else None)

    def drops_output(self, output: Stage1Output) -> bool:
        """An output phase 2 must not render: its thread is one `names_thread` names (the output
        carries its project key; its folder counts whenever the ledger names folders)."""
        return self._names(output.thread_id, output.project_key, output.cwd)

    def _names(self, thread_id: str, key: str | None, cwd: str | None) -> bool:
        if _digest(self.salt, "thread", thread_id) in self.threads:
            return True
        if key is not None and _digest(self.salt, "project", key) in self.projects:
            return True
        if not cwd or not self.folders:
            return False
        folder = PurePosixPath(cwd.rstrip("/") or "/")
        return any(_digest(self.salt, "folder", str(candidate)) in self.folders for candidate in (folder, *folder.parents))

    def honoured(self, selection: list[Stage1Output]) -> list[Stage1Output]:
        """`selection` as phase 2 may render it: outputs of forgotten threads left out, the rest
        without the lines (and slug words) holding a forgotten text."""
        if self.empty:
            return selection
        kept = []
        for output in selection:
            if self.drops_output(output):
                continue
            if self.texts:
                output = output.model_copy(
                    update={
                        "raw_memory": self.scrub(output.raw_memory),
                        "rollout_summary": self.scrub(output.rollout_summary),
                        "rollout_slug": self.scrub_slug(output.rollout_slug),
                    }
                )
            kept.append(output)
        return kept

    def scrub_slug(self, slug: str | None) -> str | None:
        """The slug without the words carrying a forgotten text (as `forget --match` renames)."""
        for forgotten in self.texts:
            if slug and (forgotten.in_name(slug) or forgotten.in_name(sanitize_slug(slug))):
                slug = forgotten.neutral_name(slug) or None
                if slug and forgotten.in_name(sanitize_slug(slug)):
                    slug = None
        return slug

    def scrub(self, text: str) -> str:
        """`text` without the lines holding a forgotten text (record lines stay, as a forget keeps them)."""
        for forgotten in self.texts:
            if forgotten.may_hold(text):
                text = edit_lines(text, forgotten).text
        return text


def record_in_ledger(root: MemoryRoot, add: Callable[[ForgetLedger], None]) -> None:
    """Load the folder's ledger, `add` to it and save it: what a forget does before it changes
    the state DB or the folder (a folder that refuses the write stops the forget here)."""
    root.check_writable()
    ledger = ForgetLedger.load(root)
    add(ledger)
    ledger.save(root)
