"""The web console: a page served by the Function app for people and operators (docs/console.md)."""
