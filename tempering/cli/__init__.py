"""The `temper` command."""
