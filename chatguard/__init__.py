"""The `chatguard` command's home. It owns no subcommand: `indexer`, `local` and `ops` each
contribute theirs through `register(subparsers)` (chatguard/cli.py lists them)."""
