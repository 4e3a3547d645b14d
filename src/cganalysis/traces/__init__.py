"""The project's cellular link traces: capacity model, mahimahi format, search path."""
