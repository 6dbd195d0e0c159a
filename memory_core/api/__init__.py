"""HTTP entry points: the functions ``function_app.py`` wires to routes."""
