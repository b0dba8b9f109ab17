"""Codex's side: what we put into a Codex home and check there, one module per verb (`install`,
`uninstall`, `doctor`), Codex's record of trusted hooks (`trust`) and the hook launcher
(`launcher`), with what they share (`hooks_file`, `binary`, `changes`).

Above `read/`: the hooks we install run the read path, so this package imports it and nothing of
the read path imports back (what a hook itself says in Codex is `read.hook_notices`; the limits
Codex puts on a hook's text are in `tokens`, which the read path and the memory folder count with).
"""
