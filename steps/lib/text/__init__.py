"""What the model reads and how text is measured.

prompt.py builds the system prompt, the grounding block and the history candidates;
tokens.py splits words into ranking terms and estimates token counts (never a bound: that
is money/byte_bound.py). Import the modules themselves: this file imports nothing.
"""
