"""SQL environments: `sql/sqlite-v1` (env.py), its databases and naming styles (schemas.py),
their themes and the held-out ones (themes.py), question families (questions.py) and
sandboxed verifier (verify.py)."""
