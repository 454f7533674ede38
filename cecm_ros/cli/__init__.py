"""The `cecm` command: the face over every layer below (main.py: the parser and the
commands; study.py: `cecm study` and `cecm estimate --from-dataset`). Nothing below
imports it."""
