"""The site's knowledge and how a question finds its passages (numpy: S4 and S7 only).

knowledge.py loads and checks the index artifact, retrieval.py ranks its chunks, followup.py
turns a follow-up question into a query, preload.py loads the index at S4's INIT. Import the
modules themselves: this file imports nothing.
"""
