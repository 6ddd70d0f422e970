"""What every step runs on: settings, AWS clients, secrets, errors, logs and metrics.

settings.py is the one frozen configuration; clients.py builds botocore clients;
secrets.py reads SSM parameters; errors.py is the steps' error hierarchy; telemetry.py and
observability.py log, count and trace; init_phase.py and caches.py manage what a container
keeps; stages.py is the table of pipeline stages. Import the modules themselves: this file
imports nothing.
"""
