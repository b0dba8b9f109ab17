"""Extract: one claimed rollout becomes a stage-1 memory (extraction, start gates, the quality check)."""
