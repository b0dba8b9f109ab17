"""The product's benchmarks, one module each, run from the repo root as `python -m benchmarks.<name>`.

Each measures a goal of an issue or a shipped mechanism (README.md has the current figures and what
they mean); `support` holds their shared plumbing. Importing a benchmark runs nothing: each runs
from its `main()` under the module's main guard. Not part of the wheel (pyproject lists packages).
"""
