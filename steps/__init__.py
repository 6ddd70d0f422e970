"""One Lambda handler module per pipeline stage; see steps/lib/runtime/stages.py for the table."""
