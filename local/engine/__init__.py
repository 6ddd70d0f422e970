"""The offline engine: the real ASL on moto's Step Functions engine, and the AWS stand-ins
around it (named as such: they model AWS, they are not AWS).

- runtime.py: LocalRuntime, the whole pipeline in one process (the entry point)
- step_functions.py: the ASL on moto's engine, Lambda tasks run in-process
- results.py: the HTTP reply and per-step records of one execution
- edge.py: what CloudFront, WAF and API Gateway do before an execution, as pure functions
- wire.py: every emulated AWS call passes here (faults, contention, atomic calls)
- tracing.py: what each step decided and which AWS calls it made
- bedrock_access.py: the real Bedrock clients for `--model bedrock`
- tables.py: the ledger table's shape for moto
- dynamo_tx.py, parse_cache.py, light_imports.py, shared_models.py, wakeup.py: moto seams
  that keep a run fast (each says what it replaces and why)

Nothing is re-exported here: the light modules (edge.py, parse_cache.py) are imported by
commands that must not pay for moto, so callers import the module they need.
"""
