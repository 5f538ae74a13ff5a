"""The families of `code/steps-v1`: functions whose reference bodies are multi-step algorithms.

`code/docstring-v1`'s bodies are one line in the median task. HumanEval's canonical solutions
run to five or more, so these families each need 4 to 12 lines: a loop with state, branches
inside it, a stack, a grid walked by index. Five kinds, in three modules:
- scans: one pass carrying a running total, a best-so-far or a last position (steps_scans.py);
- stacks: brackets, undo/redo, a browser's history, postfix arithmetic (steps_scans.py);
- grids: lists of lists read by row, column and neighbour (steps_grids.py);
- simulation: moves or commands applied under stated rules (steps_grids.py);
- text_rules: formatting and parsing with branches (steps_text.py).
Each phrasing states every rule and edge case, so that the docstring alone specifies the
function; none of them implements a problem of HumanEval or `code/handwritten-v1`.
"""

from __future__ import annotations

from .family import kinds
from .steps_grids import GRIDS, SIMULATION
from .steps_scans import SCANS, STACKS
from .steps_text import TEXT_RULES

FAMILIES = kinds(scans=SCANS, stacks=STACKS, grids=GRIDS, simulation=SIMULATION, text_rules=TEXT_RULES)
KINDS = ("scans", "stacks", "grids", "simulation", "text_rules")
