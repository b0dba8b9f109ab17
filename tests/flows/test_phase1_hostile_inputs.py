"""No input of any shape stops a run (issue 29): the real phase-1 flow (discovery, citation
harvest, the rate-limit guard, claims, extraction with the offline heuristic provider, finalize)
over a Codex home where good sessions sit beside hostile ones.

Hypothesis draws the hostile entries: file kinds (FIFO, symlink to /dev/zero, symlink loop,
folder named like a rollout, socket, unreadable file, a line past the line bound, a sparse file
past the size bound, damaged `.jsonl.zst`), session metadata past what can be stored or looked up
(a 10 KB id, a 100 KB cwd or remote, a cwd with a name past 255 bytes), encodings (lone surrogates, bytes that are not UTF-8,
NUL, a BOM, in user and assistant text, in `cwd`, in tool output, in a folder name) and JSON
shapes (any JSON value in any field). Whatever it draws, every good session reaches its outcome
in the same run, every entry that is not a session is one named file outcome in the report, and
the run ends (pytest-timeout bounds the whole test; a FIFO or `/dev/zero` used to hang it).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_memories.ingest import rollout_files
from codex_memories.ingest.rate_limits import newest_rollout_snapshot
from codex_memories.outcomes import Outcome
from codex_memories.runtime import close_stores
from codex_memories.settings import SettingsOverrides
from tests.ingest.test_rollouts_fuzz import mutated_line
from tests.support.hostile_files import NOT_A_FILE_KINDS, plant
from tests.support.rollout_factory import rollout_lines, rollout_path_for, uuid7_at, write_rollout

pytestmark = [pytest.mark.flow, pytest.mark.usefixtures("prefect_harness"), pytest.mark.timeout(1800)]

NOW = datetime.now(UTC)
SUCCEEDED = {Outcome.succeeded, Outcome.succeeded_no_output}
# Entries that are not sessions, and the file outcome each must be in the run report.
FILE_KINDS = {
    **dict.fromkeys(NOT_A_FILE_KINDS, Outcome.skipped_rollout_not_a_file),
    "sparse_past_the_size_bound": Outcome.failed_rollout_too_large,
}
if rollout_files.zstd_supported():
    FILE_KINDS |= {"zstd_cut_inside_a_frame": Outcome.failed_rollout_decompress, "zstd_garbage": Outcome.failed_rollout_decompress}
# Sessions that are still sessions, however they are damaged: each must succeed.
ENCODINGS = ("lone_surrogate", "invalid_utf8", "nul", "bom")
PLACES = ("user", "assistant", "cwd", "tool_output")
SURVIVING_FILES = ("unreadable_file", "line_past_the_line_bound")
# Session metadata no row can be keyed by, no index can hold, or no file system can look up.
ODD_METADATA = ("id_of_10_kb", "cwd_of_100_kb", "cwd_with_a_name_past_255_bytes", "remote_of_100_kb")


@dataclass(frozen=True)
class Hazards:
    file_kinds: list[str]
    encodings: list[tuple[str, str]]  # (encoding, place)
    surviving_files: list[str]
    odd_metadata: list[str]
    undecodable_folder: bool
    shaped_lines: list[list[bytes]]  # sessions whose lines hold any JSON in any field


hazards = st.builds(
    Hazards,
    file_kinds=st.lists(st.sampled_from(sorted(FILE_KINDS)), max_size=3),
    encodings=st.lists(st.tuples(st.sampled_from(ENCODINGS), st.sampled_from(PLACES)), max_size=3),
    surviving_files=st.lists(st.sampled_from(SURVIVING_FILES), max_size=1),
    odd_metadata=st.lists(st.sampled_from(ODD_METADATA), max_size=2),
    undecodable_folder=st.booleans(),
    shaped_lines=st.lists(st.lists(mutated_line(), min_size=1, max_size=6), max_size=2),
)


# --- Writing the hazards ---------------------------------------------------------------------


def _created(index: int) -> datetime:
    return NOW - timedelta(hours=30, minutes=index)


def _thread_id(index: int) -> str:
    return uuid7_at(_created(index), rng=random.Random(index))


def _bad_name(folder: Path, index: int, suffix: str = ".jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"rollout-2026-01-01T00-00-{index:02d}-{_thread_id(index)}{suffix}"


def write_file_kind(kind: str, folder: Path, index: int) -> None:
    path = _bad_name(folder, index, ".jsonl.zst" if kind.startswith("zstd") else ".jsonl")
    if not kind.startswith("zstd"):
        plant(kind, path)
    else:
        import zstandard

        good = zstandard.ZstdCompressor().compress(_session_bytes(index, "a compressed session"))
        path.write_bytes(good[: len(good) // 2] if kind == "zstd_cut_inside_a_frame" else b"\x28\xb5\x2f\xfd" + b"garbage" * 20)


def _session_bytes(index: int, message: str, **options) -> bytes:
    lines = rollout_lines(thread_id=_thread_id(index), created_at=_created(index), user_messages=[message], **options)
    return b"".join(json.dumps(line, separators=(",", ":")).encode("ascii") + b"\n" for line in lines)


_MARK = "MARK-9f1c"
_DAMAGE = {
    "lone_surrogate": (b"\\ud800", b"\\udc00"),
    "invalid_utf8": (b"\xff\xfe", b"caf\xe9"),
    "nul": (b"\\u0000", b"\\u0000"),
}


def write_damaged_session(home: Path, index: int, encoding: str, place: str) -> str:
    """A real session whose text in `place` carries `encoding` damage; returns its thread id."""
    options: dict = {"assistant_messages": ["Done."], "tool_calls": [("make test", "ok")], "cwd": "/src/app"}
    message = "Always run make test before pushing."
    if place == "user":
        message = f"{message} {_MARK}"
    elif place == "assistant":
        options["assistant_messages"] = [f"Done {_MARK}."]
    elif place == "cwd":
        options["cwd"] = f"/src/{_MARK}"
    else:
        options["tool_calls"] = [("make test", f"ok {_MARK}")]
    data = _session_bytes(index, message, **options)
    if encoding == "bom":
        data = b"\xef\xbb\xbf" + data
    else:
        first, second = _DAMAGE[encoding]
        data = data.replace(_MARK.encode(), first + b"x" + second)
    path = rollout_path_for(home, _created(index), _thread_id(index))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return _thread_id(index)


def write_surviving_file(home: Path, index: int, kind: str) -> str:
    path = rollout_path_for(home, _created(index), _thread_id(index))
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _session_bytes(index, "Prefer ripgrep over grep in this repository.")
    if kind == "unreadable_file":
        path.write_bytes(data)
        path.chmod(0)  # root reads it anyway; anyone else gets failed_rollout_unreadable
    else:
        head, tail = data.split(b"\n", 1)
        with path.open("wb") as handle:  # a line of NUL bytes past MAX_LINE_BYTES, as a hole
            handle.write(head + b"\n" + b'{"type":"event_msg","payload":{"type":"x","v":"')
            handle.seek(handle.tell() + rollout_files_line_bound() + 1)
            handle.write(b'"}}\n' + tail)
    return _thread_id(index)


def write_odd_metadata_session(home: Path, index: int, odd: str) -> str:
    """A real session whose session_meta holds `odd`; returns the thread id it must be known by."""
    options: dict = {"cwd": "/src/app"}
    session_id = _thread_id(index)
    if odd == "id_of_10_kb":
        session_id = "a1" * 5_000  # the file name's id stands in for it
    elif odd == "cwd_of_100_kb":
        options["cwd"] = "/" + "c" * 100_000
    elif odd == "cwd_with_a_name_past_255_bytes":
        # Stored; without a remote the project is looked up by it, which fails (ENAMETOOLONG).
        options |= {"cwd": "/tmp/" + "n" * 300, "repository_url": ""}
    else:
        options["repository_url"] = "https://github.com/acme/" + "r" * 100_000
    lines = rollout_lines(thread_id=session_id, created_at=_created(index), user_messages=["Use tabs in the Makefile."], **options)
    path = rollout_path_for(home, _created(index), _thread_id(index))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return _thread_id(index)


def rollout_files_line_bound() -> int:
    from codex_memories.ingest.rollout_reader import MAX_LINE_BYTES

    return MAX_LINE_BYTES


def write_shaped_session(home: Path, index: int, lines: list[bytes]) -> None:
    path = rollout_path_for(home, _created(index), _thread_id(index))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_session_bytes(index, "Use tabs in the Makefile.") + b"\n".join(lines) + b"\n")


# --- The run ---------------------------------------------------------------------------------


def run_phase1(root: Path):
    from codex_memories_flows.flow_runs import report_of
    from codex_memories_flows.phase1 import phase1

    # A run with a failed extraction ends Partial (a failed-type state): read its report from the state.
    return report_of(phase1(
        return_state=True,
        overrides=SettingsOverrides(
            codex_home=str(root / "codex_home"),
            db_url=f"sqlite:///{root / 'state.sqlite'}",
            memory_root=str(root / "memories"),
            provider="heuristic",
            max_rollouts_per_startup=128,
        ),
    ))


@settings(
    max_examples=int(os.environ.get("CODEX_MEMORIES_HOSTILE_EXAMPLES", "8")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(drawn=hazards)
def test_good_sessions_beside_hostile_entries_all_reach_their_outcome_in_one_run(drawn: Hazards) -> None:
    root = Path(tempfile.mkdtemp(prefix="hostile-"))
    try:
        home = root / "codex_home"
        home.mkdir()
        (home / "config.toml").write_text("[features]\nmemories = true\n", encoding="utf-8")
        good = [
            write_rollout(home, created_at=NOW - timedelta(hours=26, minutes=minute), user_messages=[message]).stem[-36:]
            for minute, message in enumerate(
                ["From now on run make lint before committing.", "Use httpx, not requests.", "Deploy with make ship."]
            )
        ]
        index = 0
        day = home / "sessions" / "2026" / "01" / "01"
        expected_files: dict[str, int] = {}
        for kind in drawn.file_kinds:
            index += 1
            write_file_kind(kind, day, index)
            expected_files[FILE_KINDS[kind].value] = expected_files.get(FILE_KINDS[kind].value, 0) + 1
        for encoding, place in drawn.encodings:
            index += 1
            good.append(write_damaged_session(home, index, encoding, place))
        for kind in drawn.surviving_files:
            index += 1
            good.append(write_surviving_file(home, index, kind))
        # Sessions with odd metadata reach an outcome of their own (a 100 KB cwd quoted in the
        # memory fails the quality check, as it should), under the id of their file name.
        odd_sessions = []
        for odd in drawn.odd_metadata:
            index += 1
            odd_sessions.append(write_odd_metadata_session(home, index, odd))
        if drawn.undecodable_folder:
            index += 1
            folder = home / "sessions" / os.fsdecode(b"caf\xe9")
            folder.mkdir(parents=True)
            (folder / f"rollout-2026-01-01T00-00-00-{_thread_id(index)}.jsonl").write_bytes(_session_bytes(index, "hidden"))
            expected_files["skipped_rollout_unusable_path"] = 1
        for lines in drawn.shaped_lines:
            index += 1
            write_shaped_session(home, index, lines)

        assert newest_rollout_snapshot(home) is None  # the guard's own reader: no hang, no error
        report = run_phase1(root)

        outcomes = {line.thread_id: line.outcome for line in report.extractions}
        for thread_id in good:
            assert outcomes.get(thread_id) in SUCCEEDED, (thread_id, outcomes.get(thread_id), report.discovery)
        for thread_id in odd_sessions:
            assert outcomes.get(thread_id) in SUCCEEDED | {Outcome.failed_quality_check}, (thread_id, outcomes.get(thread_id))
        left_out = {
            key.removeprefix("files left out: "): count for key, count in report.discovery.items() if key.startswith("files left out: ")
        }
        assert left_out == expected_files
        assert all(isinstance(outcome, Outcome) for outcome in outcomes.values())
    finally:
        close_stores()
        shutil.rmtree(root)
