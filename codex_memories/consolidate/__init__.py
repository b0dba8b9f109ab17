"""Consolidate: phase 2 steps, input sync, the git baseline, the consolidators and the agent."""
