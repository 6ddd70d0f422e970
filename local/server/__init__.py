"""The local HTTP server of `chatguard serve`: one HTTP contract, two carriers.

- routes.py: the contract as one pure dispatch (a Request in, a Response out)
- uvicorn_server.py: what `chatguard serve` runs (uvicorn's h11 protocol)
- stdlib_server.py: the same contract on the standard library's server, for the benchmark
- listening.py: the listening socket, bound before the runtime starts
- cors.py: the cross-origin decision for POST /chat
- site.py: the demo site with the widget on each page
- admin.py: the operator's `/_admin/*` routes behind `--local`

Nothing is re-exported here: listening.py is imported before anything heavy loads, so
callers import the module they need.
"""
