"""The export layer: session histories that leave the building.

It reads the store and writes files (`jsonl`, the verifiable JSON Lines of
docs/export-format.md; `sheets`, CSV for a spreadsheet), reads such files back and
checks them with no database (`offline`), and restores them into an empty one
(`restore`). What a file covers is a `scope.Scope`: a table, a player, a time range of
the club, or the whole log.
"""
