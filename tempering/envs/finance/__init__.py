"""Finance environments: questions on procedurally generated company filings.

    finance/statements-v1     StatementsEnv: income statement, balance sheet and cash-flow
                              statement for 2-4 fiscal years (segments at higher levels),
                              MD&A and notes in the prompt; fifteen question families from
                              lookups (level 1) to covenant compliance (level 5)
    finance/filings-long-v1   FilingsEnv: the same questions on a long report the model
                              reads with search / read_section tool calls

Each filing is printed in a layout drawn per task (layout.py): table style, statement
order, line-item names, units and how they are announced, negative signs, year headers.
Both envs have a third split, `unseen`, of layouts train and test never draw.

filing.py generates statements that tie out (and plants an imbalance where a question asks
about one); questions.py holds the families and their gold answers; layout.py, render.py
and document.py turn a filing into text; verify.py grades `Answer:` lines, scale- and
unit-aware. The grading is pure data comparison: nothing the model writes is executed.
"""

from tempering.envs.finance.envs import FILINGS_ID, STATEMENTS_ID, FilingsEnv, StatementsEnv

__all__ = ["FILINGS_ID", "STATEMENTS_ID", "FilingsEnv", "StatementsEnv"]
