"""Who answers and who embeds the query: Bedrock, or the offline stand-ins.

models.py chooses between them; bedrock.py and offline.py implement them; model_ids.py knows
model ids and where CountTokens exists; hashing_embedder.py is the offline embedder the
indexer shares. Import the modules themselves: this file imports nothing, so the gate steps
never load numpy through it.
"""
