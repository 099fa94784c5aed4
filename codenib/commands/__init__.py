"""Sub-commands of the `codenib` command line, one module each: `command` (the bottom:
`Command`, `execute`), the sub-commands, `registry` (their names) and `cli` (the top)."""
