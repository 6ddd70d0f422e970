"""What `chatguard doctor` costs and touches, said before it runs: a leaf both the parser
(ops/doctor/arguments.py, in --help) and the command (ops/doctor/command.py) read, so neither
imports the other for it."""

SPEND_NOTICE = (
    "doctor sends one Converse call (maxTokens 1) and one at max_output_tokens (about\n"
    "USD 0.003 at 512 tokens), one ApplyGuardrail of a short probe,\n"
    "one embedding and a Cost Explorer query (USD 0.01 per request): about USD 0.03 in all,\n"
    "plus one real chat message from this address (marked in the ledger; at most one\n"
    "worst-case reservation, see chatguard spend). It sets one alarm per stack to ALARM for\n"
    "a moment: subscribers get one test e-mail."
)
