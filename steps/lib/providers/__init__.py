"""Who answers and who embeds the query: Bedrock, or the offline stand-ins.

models.py chooses between them (the two seams); interface.py holds what every
implementation meets (the reply and verdict types, the protocols, the usage counters) and
imports nothing of ours; bedrock.py and offline.py implement it; model_ids.py knows model
ids and where CountTokens exists; hashing_embedder.py is the offline embedder the indexer
shares. Import the modules themselves: this file imports nothing, so the gate steps never
load numpy through it.
"""
