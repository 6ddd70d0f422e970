"""The doctor's room: `chatguard doctor` and the checks it runs against a deployed stack.

- arguments.py: its parser entry (what `chatguard --help` imports; nothing heavy)
- notice.py: what a run costs and touches, said in --help and before the checks
- command.py: runs the checks in order and prints one line each
- deployed.py: what the checks read about the stack (outputs, Lambda settings, alarms)
- account.py, alarm.py, bedrock.py, waf.py: the checks, one AWS service each
- result.py: the four outcomes of a check (a leaf every check module shares)

Nothing is re-exported here: importing the package must stay as light as its parser entry,
so callers import the module they need.
"""
