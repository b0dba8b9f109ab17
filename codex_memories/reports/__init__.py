"""Run reports: what each flow run publishes as a Prefect markdown artifact and prints, and the
verdict its final state carries.

Pure rendering: counts per outcome code, each failure with its reason, discovery and quality
facts, token usage, with the same outcome strings as the DB and the logs. One module per run
kind (`phase1`, `phase2`, `forget`, `backfill`); `verdicts` decides, from a report alone,
whether the run did its job.
"""
