"""The small runtime library the seven step handlers share (no numpy outside retrieval)."""
