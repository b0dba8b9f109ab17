"""The memory folder itself: its layout and git baseline (`workspace`), the copies phase 2 works
in and publishes from (`staging`), the code-written inputs it holds (`inputs`), the notes a user or
an agent adds to its ad-hoc extension (`notes`), and a project's memories as a file in its
repository (`team_memory`).

A package of its own because phase 2 (`consolidate`), forgetting (`forget`) and the read path
(`read`) all change or read the folder: forgetting by text rewrites the baseline, the synced
inputs, the notes and the team files, a reset discards the staged copies. With the folder below
all three, they import it and nothing imports back.
"""
