"""One Lambda handler module per pipeline stage; see steps/lib/stages.py for the table."""
