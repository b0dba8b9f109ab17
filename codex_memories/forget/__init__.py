"""Forget: the eleven forgetting routes (spec section 6, issues 15 and 29), one small block each, and their audit.

`routes.ROUTES` is the table of routes: one record each with its `ForgetRoute` value(s), its
block(s), its caller, its trigger, what a request aims it at and, for a time-based route, its
next-change moment. The forget flow's route choices, the CLI's forget commands and phase 2's
early finish derive from it; this docstring's table mirrors it (a test checks the two agree). A
route may write several values: `ForgetRoute` has 14 values for 11 routes (route 5 writes
`pollution` or `disabled`; route 7 writes `ad_hoc_note`, `user_edit` or `manual_reset`).

Every route block DECIDES what to forget, makes the change that belongs to it (a DB row, a
thread's memory mode, an expired file) and RETURNS the `ForgetAction`s describing it; none of
them writes an audit row. `audit.record_actions(store, actions)` is the one writer of
`forget_audit` rows, so a caller reads `record_actions(store, route_block(...))`.

| # | route                  | module                  | `ForgetRoute`                       | caller |
|---|------------------------|-------------------------|-------------------------------------|--------|
| 1 | retention prune        | `retention`             | `retention_prune`                   | phase 1 task `prune-retention` |
| 2 | selection window       | `selection_window`      | `selection_window`                  | `consolidate.steps.sync_inputs` |
| 3 | empty re-extraction    | `empty_reextraction`    | `empty_reextraction`                | `extract.extraction.finalize_extraction` |
| 4 | thread deletion        | `threads`               | `thread_deletion`                   | phase 1, the forget flow, the CLI |
| 5 | pollution / disabling  | `threads`               | `pollution`, `disabled`             | phase 1, the forget flow, the CLI |
| 6 | extension expiry       | `extension_expiry`      | `extension_expiry`                  | `consolidate.steps.prune_extension_resources` |
| 6b| typed-entry expiry     | `entry_expiry`          | `entry_expiry`                      | `consolidate.steps.expire_typed_entries` |
| 7 | manual                 | `manual`                | `ad_hoc_note`, `user_edit`, `manual_reset` | phase 2, the forget flow, the CLI |
| 8 | tool-output provenance | `consolidate.provenance_check` | `tool_output_provenance`   | phase 2 |
|   | project deletion       | `selective`             | `project_deletion`                  | the forget flow, the CLI |
|   | text match             | `text_match`            | `text_match`                        | the forget flow, the CLI |

Route 8 (issue 29) is ours too: a line a consolidation wrote whose words came only from tool
output leaves the consolidated files before they go live; it is recorded here like a forgotten
line. Route 6b (issue 15) is ours, not Codex's: a temporary typed entry past its `expires` date leaves
the stage-1 row and the synced inputs at the next phase 2 (`entry_expiry` says why it is not
route 6).

The last two are ours (issue 15): `selective` (a project's threads, as route 4) and
`text_match` (every memory line and name holding a text), for the forget flow and the CLI.

Memory text in `MEMORY.md` / `memory_summary.md` / `skills/` is edited by `text_match` only (at
once, in the folder and its git baseline alike); the DB routes change what phase 2 selects, the
next phase-2 sync deletes the input files, and the consolidator removes what only those inputs
supported (spec 6).
"""
