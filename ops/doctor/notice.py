"""What `chatguard doctor` costs and touches, said before it runs: a leaf both the parser
(ops/doctor/arguments.py, in --help) and the command (ops/doctor/command.py) read, so neither
imports the other for it."""

SPEND_NOTICE = (
    "doctor sends one Converse call (maxTokens 1), one ApplyGuardrail of a short probe,\n"
    "one embedding and a Cost Explorer query (USD 0.01 per request): about USD 0.03 in all.\n"
    "It sets one alarm per stack to ALARM for a moment: subscribers get one test e-mail."
)
