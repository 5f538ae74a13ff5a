"""`sql/shapes-v1`: SQL questions over databases of many shapes, naming styles and vocabularies.

Written apart from `sql/sqlite-v1`'s templates (whose every database is one four-table shape):

    vocab.py          what a column means (`Concept`: the question's words, the column's spellings)
    naming.py         how a database spells identifiers (`Style`: snake, camelCase, UPPER, Hungarian...)
    topology.py       the shapes: which tables reference which (chain, star, junction, self-reference...)
    build.py          a shape + a domain + a style -> a filled SQLite database with its schema text
    domains_train.py  the vocabularies of the shapes train and test draw
    domains_unseen.py the held-out shapes' vocabularies (only the unseen split draws them)
    families_*.py     the question families, each posing (question, reference query, broken query)
    env.py            generation, splits and the env class
"""
