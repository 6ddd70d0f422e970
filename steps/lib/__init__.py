"""The small runtime library the seven step handlers share, one package per concern:
money/ (the reserve, the ledger and the proof that bounds the bill), providers/ (who
answers and embeds), grounding/ (the index and retrieval; numpy, S4 and S7 only), text/
(the prompt and the token estimate), request/ (what arrives and how far it is trusted),
runtime/ (settings, clients, secrets, errors, telemetry). Only grounding/ and the embedders
in providers/ touch numpy."""
