"""The recall index of a memory folder: chunks, a full-text table and their embeddings, in one file.

Contract:
- Lives at `<root>/.codex-memories/recall-index.sqlite` (`paths.recall_index_path()`), in the
  bookkeeping folder the memory tools hide, never among the files Codex reads. It is derived
  data: deleting it loses nothing.
- `build_index(root)` reads every source file (`chunks.source_files`), cuts it into chunks,
  encodes each chunk's own words with the contextual encoder (`contextual`, all-MiniLM-L6-v2:
  a query then costs one forward pass, of the query alone) and writes a new index to a temp file in the same folder, then renames it over the
  old one: a reader sees the old index or the new one, never half of one. Vectors of chunks whose
  searched text did not change are copied from the previous index instead of being re-encoded
  (a first build costs one forward pass per chunk; benchmarks/README.md has the figures).
  The full-text table holds each chunk's searched text plus `cjk_bigrams` of it: SQLite's
  unicode61 tokenizer keeps a run of Chinese or Japanese characters as one token, so without
  the overlapping character pairs a Chinese question could only match a whole run verbatim.
  Returns `IndexStats`. Phase 2 calls it at its end; anyone may call it at any time.
- `open_index(root, rebuild=True)` is the readers' entry: None when the memory folder does not exist;
  otherwise an `Index` that matches the files on disk now. The index is rebuilt first when it is
  missing, damaged (not SQLite, a missing table, a wrong format or embedder id, vector rows that
  do not match the chunks), or stale: any source file added, removed, or changed in size or
  mtime since the build. So a folder written by hand or by Codex works without phase 2. With
  `rebuild=False` (the prompt hook) it never builds: `IndexNotReady` says missing, damaged or stale.
- File stats are taken before a file is read, so an edit racing a build makes the next reader
  rebuild rather than serve the old text under the new stats.
- Concurrent builders each write their own temp file; the last rename wins and both are whole.
- `Index.scopes()` is every chunk's scope by id (what a reader filters on before ranking).
- `start_background_build(root)` (the prompt hook, on a missing, stale or damaged index) starts
  one detached `python -m codex_memories.read.index ROOT` (`detached.start_detached`) and returns its pid, or None when a
  build it started is still under way (`BUILD_MARKER`, younger than `BUILD_MARKER_MAX_AGE`) or
  none can start (the folder is not writable): a note, a forget or a hand edit makes the index
  stale, and without this no prompt would get a memory until the next phase 2.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codex_memories import paths
from codex_memories.read import contextual
from codex_memories.read.chunks import Chunk, chunk_file, source_files
from codex_memories.read.detached import start_detached

# 3: bullets right under a task-group heading are chunks; 4: project markers are scopes;
# 5: contextual vectors for every chunk, CJK character pairs in the full-text table.
FORMAT_VERSION = "5"
FULL_TEXT_TOKENIZER = "porter unicode61 remove_diacritics 2"

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, line_start INTEGER NOT NULL, line_end INTEGER NOT NULL,
    text TEXT NOT NULL, scope TEXT, date TEXT, text_hash TEXT NOT NULL
);
CREATE TABLE vectors (id INTEGER PRIMARY KEY CHECK (id = 1), rows INTEGER NOT NULL, data BLOB NOT NULL);
CREATE VIRTUAL TABLE chunk_text USING fts5(body, content = '', tokenize = '{FULL_TEXT_TOKENIZER}');
"""

FileStats = tuple[tuple[str, int, int], ...]
# CJK ideographs, kana and hangul: scripts written without spaces between words.
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


class IndexDamaged(Exception):
    """The index file cannot be trusted; readers rebuild it (never raised to a reader)."""


@dataclass(frozen=True)
class IndexStats:
    files: int
    chunks: int
    embedded: int  # Chunks embedded in this build (the rest were copied from the previous index).
    bytes: int
    seconds: float
    path: Path


@dataclass(frozen=True)
class IndexedChunk:
    id: int
    path: str
    line_start: int
    line_end: int
    text: str
    scope: str | None
    date: str | None


class Index:
    """An open, verified index: full-text queries through `connection`, vectors in memory."""

    def __init__(self, connection: sqlite3.Connection, vectors: np.ndarray, chunk_count: int) -> None:
        self.connection = connection
        self.vectors = vectors
        self.chunk_count = chunk_count

    def chunks(self, ids: list[int]) -> dict[int, IndexedChunk]:
        found: dict[int, IndexedChunk] = {}
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self.connection.execute(
                f"SELECT id, path, line_start, line_end, text, scope, date FROM chunks WHERE id IN ({marks})", batch
            )
            for row in rows:
                found[row[0]] = IndexedChunk(*row)
        return found

    def scopes(self) -> list[str | None]:
        """Every chunk's scope; chunk id i is item i - 1."""
        return [row[0] for row in self.connection.execute("SELECT scope FROM chunks ORDER BY id")]

    def close(self) -> None:
        self.connection.close()


def cjk_bigrams(text: str) -> list[str]:
    """The overlapping character pairs of every CJK run in `text` (a lone character stays itself).

    The full-text table indexes them and a query searches them (`recall.query_terms`): Chinese has
    no spaces, and a pair is the unit that most often carries a word."""
    pairs: list[str] = []
    for run in CJK_RUN.findall(text):
        if len(run) == 1:
            pairs.append(run)
        pairs.extend(run[position : position + 2] for position in range(len(run) - 1))
    return pairs


def searchable(text: str) -> str:
    """What the full-text table holds for a chunk: its searched text, then its CJK character pairs."""
    pairs = cjk_bigrams(text)
    return f"{text}\n{' '.join(pairs)}" if pairs else text


def index_file(root: Path) -> Path:
    return Path(root) / paths.recall_index_path()


def build_index(root: Path) -> IndexStats:
    """Rebuild the index of `root` from its files and put it in place atomically."""
    started = time.perf_counter()
    root = Path(root)
    target = index_file(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    stats, chunks = _read_sources(root)
    hashes = [_text_hash(chunk.embed_text) for chunk in chunks]
    vectors, embedded = _vectors_for(target, chunks, hashes)

    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".recall-index-", suffix=".tmp")
    os.close(handle)
    try:
        _write(Path(temporary), stats, chunks, hashes, vectors)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return IndexStats(
        files=len(stats), chunks=len(chunks), embedded=embedded, bytes=target.stat().st_size,
        seconds=time.perf_counter() - started, path=target,
    )


class IndexNotReady(Exception):
    """`open_index(root, rebuild=False)` found no index it may use: `reason` is `missing`,
    `damaged` or `stale` (a source file changed since the build)."""

    def __init__(self, reason: str, path: Path, detail: str = "") -> None:
        super().__init__(f"recall index {reason}: {path}" + (f" ({detail})" if detail else ""))
        self.reason = reason


def open_index(root: Path, *, rebuild: bool = True) -> Index | None:
    """The index of `root`, rebuilt first when missing, damaged or stale; None without a folder.

    `rebuild=False` (the prompt hook: a build can take minutes, Codex gives a hook 10 s) never
    builds: a missing, damaged or stale index raises `IndexNotReady` instead."""
    root = Path(root)
    if not root.is_dir():
        return None
    current = current_file_stats(root)
    try:
        index = _open_verified(index_file(root), current)
    except IndexDamaged as error:
        if not rebuild:
            reason = "missing" if not index_file(root).is_file() else "damaged"
            raise IndexNotReady(reason, index_file(root), str(error)) from error
        index = None
    if index is not None:
        return index
    if not rebuild:
        raise IndexNotReady("stale", index_file(root), "a memory file changed since it was built")
    build_index(root)
    try:
        return _open_verified(index_file(root), None)
    except IndexDamaged as error:
        raise RuntimeError(f"the recall index just built at {index_file(root)} does not verify: {error}") from error


def current_file_stats(root: Path) -> FileStats:
    found = []
    for relative in source_files(root):
        try:
            info = (root / relative).lstat()
        except FileNotFoundError:
            continue  # Deleted while we listed: it is not part of the folder any more.
        found.append((relative, info.st_size, info.st_mtime_ns))
    return tuple(found)


def _read_sources(root: Path) -> tuple[FileStats, list[Chunk]]:
    stats: list[tuple[str, int, int]] = []
    chunks: list[Chunk] = []
    for relative in source_files(root):
        file = root / relative
        try:
            info = file.lstat()
            data = file.read_bytes()
        except FileNotFoundError:
            continue
        stats.append((relative, info.st_size, info.st_mtime_ns))
        text = data.decode("utf-8", errors="replace")
        chunks.extend(chunk_file(relative, text))
    return tuple(stats), chunks


def _vectors_for(target: Path, chunks: list[Chunk], hashes: list[str]) -> tuple[np.ndarray, int]:
    previous = _previous_vectors(target)
    vectors = np.zeros((len(chunks), contextual.DIMENSIONS), dtype=np.float16)
    missing = [position for position, text_hash in enumerate(hashes) if text_hash not in previous]
    for position, text_hash in enumerate(hashes):
        if text_hash in previous:
            vectors[position] = previous[text_hash]
    if missing:
        vectors[missing] = contextual.encode([chunks[position].embed_text for position in missing]).astype(np.float16)
    return vectors, len(missing)


def _previous_vectors(target: Path) -> dict[str, np.ndarray]:
    """Vectors of the previous index by text hash; empty when there is none or it is damaged."""
    try:
        index = _open_verified(target, None)
    except IndexDamaged:
        return {}
    try:
        rows = index.connection.execute("SELECT id, text_hash FROM chunks ORDER BY id").fetchall()
        return {text_hash: index.vectors[chunk_id - 1] for chunk_id, text_hash in rows}
    finally:
        index.close()


def _write(path: Path, stats: FileStats, chunks: list[Chunk], hashes: list[str], vectors: np.ndarray) -> None:
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA journal_mode = OFF")
        connection.execute("PRAGMA synchronous = OFF")
        connection.executescript(_SCHEMA)
        connection.executemany("INSERT INTO files VALUES (?, ?, ?)", stats)
        connection.executemany(
            "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (number, chunk.path, chunk.line_start, chunk.line_end, chunk.text, chunk.scope, chunk.date, text_hash)
                for number, (chunk, text_hash) in enumerate(zip(chunks, hashes, strict=True), start=1)
            ],
        )
        connection.executemany(
            "INSERT INTO chunk_text (rowid, body) VALUES (?, ?)",
            [(number, searchable(chunk.search_text)) for number, chunk in enumerate(chunks, start=1)],
        )
        connection.execute("INSERT INTO vectors VALUES (1, ?, ?)", (len(chunks), vectors.astype("<f2").tobytes()))
        connection.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("format_version", FORMAT_VERSION), ("embedder", contextual.ENCODER_ID), ("chunks", str(len(chunks)))],
        )
        connection.commit()
    finally:
        connection.close()
    # The rename publishes the file; its bytes must be on disk first or a crash could publish a torn file.
    with path.open("rb+") as file:
        os.fsync(file.fileno())


def _open_verified(path: Path, expected_stats: FileStats | None) -> Index | None:
    """The index at `path` if it is whole and (with `expected_stats`) up to date; None if stale.

    Raises IndexDamaged when the file is missing or cannot be trusted.
    """
    if not path.is_file():
        raise IndexDamaged("no index file")
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise IndexDamaged(str(error)) from error
    try:
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format_version") != FORMAT_VERSION or meta.get("embedder") != contextual.ENCODER_ID:
            raise IndexDamaged(f"index format {meta.get('format_version')!r} / embedder {meta.get('embedder')!r}")
        if expected_stats is not None:
            stored = tuple(connection.execute("SELECT path, size, mtime_ns FROM files ORDER BY path").fetchall())
            if stored != tuple(sorted(expected_stats)):
                connection.close()
                return None
        chunk_count = connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
        text_count = connection.execute("SELECT count(*) FROM chunk_text").fetchone()[0]
        vector_row = connection.execute("SELECT rows, data FROM vectors WHERE id = 1").fetchone()
        if vector_row is None or not (int(meta.get("chunks", -1)) == chunk_count == text_count == vector_row[0]):
            raise IndexDamaged("chunk, text and vector counts disagree")
        data = vector_row[1]
        if len(data) != chunk_count * contextual.DIMENSIONS * 2:
            raise IndexDamaged("vector data has the wrong size")
        vectors = np.frombuffer(data, dtype="<f2").reshape(chunk_count, contextual.DIMENSIONS).astype(np.float32)
    except IndexDamaged:
        connection.close()
        raise
    except (sqlite3.Error, ValueError) as error:
        connection.close()
        raise IndexDamaged(str(error)) from error
    return Index(connection, vectors, chunk_count)


def _text_hash(text: str) -> str:
    return hashlib.blake2b(f"{contextual.ENCODER_ID}\n{text}".encode(), digest_size=16).hexdigest()


BUILD_MARKER = "recall-index.building"
# Longer than a first build of a large folder takes on a slow machine (benchmarks/README.md, "recall
# index"); a marker older than this is a builder that died, and the next prompt starts another.
BUILD_MARKER_MAX_AGE = 15 * 60


def _build_marker(root: Path) -> Path:
    return index_file(root).parent / BUILD_MARKER


def start_background_build(root: Path) -> int | None:
    """Start a detached build of `root`'s index; its pid, or None when one is under way or none can start."""
    marker = _build_marker(Path(root))
    try:
        if time.time() - marker.stat().st_mtime < BUILD_MARKER_MAX_AGE:
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"{os.getpid()}\n", encoding="utf-8")
        return start_detached("codex_memories.read.index", [str(root)])
    except OSError:
        marker.unlink(missing_ok=True)
        return None


def main(argv: list[str] | None = None) -> int:
    """The detached builder: build, then remove the marker whatever happened (the next prompt may try again)."""
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 1:
        print("usage: python -m codex_memories.read.index MEMORY_ROOT", file=sys.stderr)
        return 2
    root = Path(arguments[0])
    try:
        build_index(root)
    finally:
        _build_marker(root).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
