"""Projects and team exports (issue 15): a project's threads and outputs, the folders a team
memory file was exported into, the working directories threads recorded.

Part of `MemoryStore` (see `store.py` for the transaction and clock contract).
"""

from __future__ import annotations

from sqlalchemy import Connection, or_, select

from codex_memories.scopes import project_key
from codex_memories.state._base import (
    IN_LIST_CHUNK,
    StoreBase,
    chunks,
    hydrated_outputs,
    output_record,
    outputs_table,
    team_exports_table,
    thread_record,
    threads_table,
)
from codex_memories.state.records import Stage1Output, ThreadRecord


class ProjectsStore(StoreBase):
    """What belongs to a project, and where its team memory went."""

    def record_team_export(self, folder: str, project_key: str) -> None:
        """Query behaviour: remember (or refresh) that a team memory file was exported into the
        repository at `folder` for `project_key`."""
        values = {"project_key": project_key, "exported_at": self._now()}

        def run(conn: Connection) -> None:
            statement = self._insert_for_upsert(team_exports_table).values(folder=folder, **values)
            conn.execute(statement.on_conflict_do_update(index_elements=[team_exports_table.c.folder], set_=values))

        self._write(run)

    def team_export_folders(self) -> list[str]:
        """Query behaviour: every repository folder a team memory file was exported into, sorted."""
        return self._read(lambda conn: list(conn.execute(select(team_exports_table.c.folder).order_by(team_exports_table.c.folder)).scalars()))

    def thread_cwds(self) -> list[str]:
        """Query behaviour: every distinct working directory a thread recorded, sorted (the
        projects whose exported team files a `forget --match` or a reset may reach)."""
        return self._read(
            lambda conn: list(conn.execute(select(threads_table.c.cwd).where(threads_table.c.cwd.is_not(None)).distinct().order_by(threads_table.c.cwd)).scalars())
        )

    def threads_for_project(self, key: str, *, folder: str | None = None) -> list[ThreadRecord]:
        """Query behaviour (issue 15, a project's memories):
        - threads whose project key (`scopes.project_key` of their `git_origin_url` and `cwd`) is
          `key`; with `folder` (the project's folder on this machine), also threads without an
          origin whose cwd is `folder` or below it (a repository without an origin is keyed by
          its root, while a thread records the subfolder it ran in);
        - every memory mode (callers filter); ordered by thread id.
        """
        base = folder.rstrip("/") if folder else None

        def belongs(cwd: str | None, origin: str | None) -> bool:
            if project_key(git_origin_url=origin, cwd=cwd) == key:
                return True
            if base is None or not cwd or project_key(git_origin_url=origin) is not None:
                return False
            cwd = cwd.rstrip("/")
            return cwd == base or cwd.startswith(base + "/")

        def run(conn: Connection) -> list[ThreadRecord]:
            # The key is computed in Python (it normalises URLs); only three columns are scanned.
            candidates = conn.execute(
                select(threads_table.c.id, threads_table.c.cwd, threads_table.c.git_origin_url).where(
                    or_(threads_table.c.cwd.is_not(None), threads_table.c.git_origin_url.is_not(None))
                )
            )
            chosen = sorted(row.id for row in candidates if belongs(row.cwd, row.git_origin_url))
            records: list[ThreadRecord] = []
            for chunk in chunks(chosen, IN_LIST_CHUNK):
                rows = conn.execute(select(threads_table).where(threads_table.c.id.in_(chunk)).order_by(threads_table.c.id))
                records.extend(thread_record(row) for row in rows)
            return records

        return self._read(run)

    def stage1_outputs_for_project(self, project_key: str, *, include_user_level: bool = False) -> list[Stage1Output]:
        """Query behaviour (issue 15; export and forgetting by project):
        - rows whose `project_key` equals `project_key` exactly (keys come from
          `scopes.project_key` / `project_key_for_directory`), whatever their thread's memory
          mode, hydrated with `cwd`, `rollout_path`, `git_branch` (outer join: a row whose thread
          is gone is still returned);
        - by default only rows holding project-level memory (`scope` `project` or `mixed`; a
          `mixed` row's user-level blocks are split off with
          `extract.scope_tagging.split_raw_memory_by_scope`); `include_user_level` adds the
          rows that are user-level only;
        - ordered by `thread_id`; uses `idx_stage1_outputs_project_key`.
        """
        scopes = ["project", "mixed", "user"] if include_user_level else ["project", "mixed"]

        def run(conn: Connection) -> list[Stage1Output]:
            rows = conn.execute(
                hydrated_outputs(outer=True)
                .where(outputs_table.c.project_key == project_key, outputs_table.c.scope.in_(scopes))
                .order_by(outputs_table.c.thread_id)
            )
            return [output_record(row) for row in rows]

        return self._read(run)
