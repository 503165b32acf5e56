"""Maintenance scripts run as ``python -m scripts.<name>`` (the example store builders)."""
