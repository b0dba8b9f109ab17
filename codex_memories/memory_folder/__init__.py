"""The memory folder itself: its layout and git baseline (`workspace`), the copies phase 2 works
in and publishes from (`staging`), and the code-written inputs it holds (`inputs`).

A package of its own because both phase 2 (`consolidate`) and forgetting (`forget`) change the
folder: forgetting by text rewrites the baseline and the synced inputs, a reset discards the
staged copies. With the folder below both, `consolidate` imports `forget` and nothing imports back.
"""
