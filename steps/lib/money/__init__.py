"""The money path: what a message may cost, the ledger that admits it, and the bound's proof.

pricing.py states the proof and its assumptions; byte_bound.py is the bound on input without
a tokenizer, metering.py fits S5's prompt into what was paid, ledger.py and ledger_items.py
admit and settle reservations in DynamoDB, spent_memo.py refuses spent days from memory.
Import the modules themselves (``from steps.lib.money import pricing``): this file imports
nothing, so a step pays only for the modules it uses.
"""
