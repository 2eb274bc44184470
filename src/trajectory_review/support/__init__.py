"""Stage 0: infrastructure every stage may use (CSV cells, the worker pool); it knows
nothing of traces, conversations or the app."""
