"""Serving function_app.py locally, as the Functions host would, without Core Tools."""
