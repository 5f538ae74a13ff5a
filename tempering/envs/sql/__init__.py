"""SQL environments: `sql/sqlite-v1` (env.py), its databases (schemas.py), question families
(questions.py) and sandboxed verifier (verify.py)."""
