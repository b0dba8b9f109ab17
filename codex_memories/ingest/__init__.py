"""Ingest: rollout files become threads and phase-1 transcripts (reading, discovery, backfill sources)."""
