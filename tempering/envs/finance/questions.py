"""Question families over a generated filing, with difficulty levels 1-5.

Each family draws the filing it needs (segments, a restatement, a restructuring charge, a
planted imbalance), asks one question and computes the gold answer from the figures as
displayed (restated where a note restates them). Questions use the canonical names
(filing.LABELS: "revenue", "net income", "total equity") and FY2024-style years whatever
the layout prints ("Net sales", "Profit for the year", "Fiscal 2024"): matching them is
part of reading the filing. The question names the unit the answer is expected in (the
tables' own unless it asks for another); the tolerance is part of the gold answer and is
stated in the prompt:

    %        ±0.05 percentage points        growth rates, margins, shares, returns
    x        ±0.01                          ratios
    amounts  ±0.5% relative (0.1% for a plain lookup), and never tighter than half a
             unit of the tables, so a gold amount of 0 has a tolerance too

`formula` is the arithmetic that gives a computed answer, over the figures as the filing
prints them ("(5,230 - 4,810) / 4,810 * 100"): the worked reply a demonstration can show,
since verify.py reads an expression as its value.

Yes/no (compliance) questions also ask for the figure that decides them; see verify.py
for how each part is scored. `wrong` is a tempting mistake (the unrestated figure, the
inverted ratio, the opposite verdict) that `broken_response` submits.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Callable

from tempering.envs.finance.filing import (LABELS, SCALES, STATEMENTS, Filing, amount_unit, generate_filing,
                                          leverage, plant_imbalance)

PERCENT, RATIO = "%", "x"
STATEMENT_NAMES = {"income": "income statement", "balance": "balance sheet", "cash_flow": "cash-flow statement",
                   "segments": "segment note", "note:restatement": "restatement note", "note:debt": "debt note",
                   "note:restructuring": "restructuring note"}


@dataclass(frozen=True)
class Gold:
    """A question and its gold answer."""

    question: str
    value: float
    """The answer; for a yes/no question, the figure the answer must cite."""
    unit: str
    """"%", "x", or an amount unit such as "USD millions"."""
    rel_tol: float
    abs_tol: float
    verdict: bool | None = None
    """Yes/no questions: the right verdict (True = yes); None for numeric questions."""
    wrong: float | None = None
    """A tempting wrong figure (numeric questions)."""
    sources: tuple[str, ...] = ()
    """Where the figures are: statement keys (income, balance, cash_flow, segments) and notes (note:<topic>)."""
    rows: tuple[str, ...] = ()
    """The line items involved, for a hint at low difficulty."""
    formula: str | None = None
    """How the answer is computed from the printed figures; None for a lookup or a yes/no question."""

    def within(self, x: float) -> bool:
        return abs(x - self.value) <= max(self.abs_tol, self.rel_tol * abs(self.value))

    @property
    def tolerance_text(self) -> str:
        if self.unit == PERCENT:
            return f"±{self.abs_tol:g} percentage points"
        if self.unit == RATIO:
            return f"±{self.abs_tol:g}"
        return f"±{self.rel_tol * 100:g}%"


Rows = tuple[str, ...]


def _pct(value: float, rows: Rows, sources: Rows, question: str, wrong: float, formula: str) -> Gold:
    return Gold(question, value, PERCENT, 0.0, 0.05, wrong=wrong, sources=sources, rows=rows,
                formula=f"{formula} * 100")


def _ratio(value: float, rows: Rows, sources: Rows, question: str, wrong: float, formula: str) -> Gold:
    return Gold(question, value, RATIO, 0.0, 0.01, wrong=wrong, sources=sources, rows=rows, formula=formula)


def _amount(f: Filing, value: float, rows: Rows, sources: Rows, question: str, wrong: float, *,
            scale: str | None = None, rel: float = 0.005, formula: str | None = None) -> Gold:
    """An amount in `scale` (default: the tables' own, whatever unit the layout announces it in)."""
    scale = scale or f.scale
    factor = SCALES[f.scale] / SCALES[scale]
    return Gold(question, value * factor, amount_unit(f.currency, scale), rel, 0.5 * factor, wrong=wrong * factor,
                sources=sources, rows=rows, formula=formula)


def _n(figure: float) -> str:
    """A figure as an operand: grouped thousands, a negative one in parentheses."""
    text = f"{abs(figure):,}"
    return f"(-{text})" if figure < 0 else text


def _filing(rng: random.Random, level: int, **needs) -> Filing:
    """A filing for a question of `level`; higher levels show more years and carry more
    notes (segments, a restatement, a restructuring charge) that may or may not matter to
    the question."""
    n_years = rng.randint(2, 3) if level <= 2 else rng.randint(2, 4)
    needs.setdefault("segments", level >= 3 and rng.random() < 0.5)
    needs.setdefault("restatement", level >= 3 and rng.random() < 0.3)
    needs.setdefault("restructuring", level >= 4 and rng.random() < 0.3)
    filing = generate_filing(rng, n_years, **needs)
    if level >= 2 and rng.random() < 0.3:  # one statement as a CSV attachment
        filing = replace(filing, csv=(rng.choice(tuple(STATEMENTS)),))
    return filing


def _statement_of(item: str) -> str:
    """The first statement showing a line item."""
    return next(key for key, items in STATEMENTS.items() if item in items)


def _later_year(rng: random.Random, f: Filing) -> int:
    """A year with a prior year shown (for changes and averages)."""
    return rng.choice(f.years[1:])


def _growth(f: Filing, item: str, year: int) -> tuple[float, float]:
    """(growth %, the tempting mistake: the change over the later year's figure)."""
    before, after = f.figure(item, year - 1), f.figure(item, year)
    return (after / before - 1) * 100, (after - before) / after * 100


def _change(f: Filing, item: str, year: int) -> str:
    before, after = f.figure(item, year - 1), f.figure(item, year)
    return f"({_n(after)} - {_n(before)}) / {_n(before)}"


# -- the families ----------------------------------------------------------------------------
def lookup(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 1)
    item = rng.choice(("revenue", "net_income", "total_assets", "cash", "long_debt", "cfo", "inventory",
                       "retained", "operating_income", "total_equity"))
    year = rng.choice(f.years)
    other = f.figure(item, f.years[0] if year != f.years[0] else f.years[1])
    return f, _amount(f, f.figure(item, year), (item,), (_statement_of(item),),
                      f"What was {LABELS[item].lower()} in FY{year}?", other, rel=0.001)


def unit_conversion(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 2)
    item = rng.choice(("revenue", "net_income", "total_assets", "cfo", "total_equity", "gross_profit"))
    year = rng.choice(f.years)
    scale = rng.choice({"ones": ("thousands", "millions"), "thousands": ("millions",),
                        "millions": ("thousands", "billions")}[f.scale])
    value = f.figure(item, year)
    factor = SCALES[f.scale] / SCALES[scale]
    formula = f"{_n(value)} * {factor:,.0f}" if factor > 1 else f"{_n(value)} / {1 / factor:,.0f}"
    gold = _amount(f, value, (item,), (_statement_of(item),), f"What was {LABELS[item].lower()} in FY{year}, in "
                   f"{amount_unit(f.currency, scale)}?", value, scale=scale, formula=formula)
    return f, replace(gold, wrong=value)  # the figure left in the tables' unit


def growth(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 2)
    item = rng.choice(("revenue", "net_income", "operating_income", "gross_profit", "total_assets"))
    year = _later_year(rng, f)
    value, wrong = _growth(f, item, year)
    statement = "balance" if item == "total_assets" else "income"
    return f, _pct(value, (item,), (statement,), f"By what percentage did {LABELS[item].lower()} change from "
                   f"FY{year - 1} to FY{year}?", wrong, _change(f, item, year))


def margin(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 2)
    kind, item = rng.choice((("gross", "gross_profit"), ("operating", "operating_income"), ("net", "net_income")))
    year = rng.choice(f.years)
    revenue = f.figure("revenue", year)
    other = "net_income" if item != "net_income" else "operating_income"
    return f, _pct(f.figure(item, year) / revenue * 100, (item, "revenue"), ("income",),
                   f"What was the {kind} margin ({LABELS[item].lower()} as a percentage of revenue) in FY{year}?",
                   f.figure(other, year) / revenue * 100, f"{_n(f.figure(item, year))} / {_n(revenue)}")


def current_ratio(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 2)
    year = rng.choice(f.years)
    assets, liabilities = f.figure("current_assets", year), f.figure("current_liabilities", year)
    return f, _ratio(assets / liabilities, ("current_assets", "current_liabilities"), ("balance",),
                     f"What was the current ratio (total current assets / total current liabilities) at the end of "
                     f"FY{year}?", liabilities / assets, f"{_n(assets)} / {_n(liabilities)}")


def debt_to_equity(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 3)
    year = rng.choice(f.years)
    equity = f.figure("total_equity", year)
    return f, _ratio(f.total_debt(year) / equity, ("short_debt", "long_debt", "total_equity"), ("balance",),
                     f"What was the debt-to-equity ratio (short-term plus long-term debt, divided by total equity) at "
                     f"the end of FY{year}?", f.figure("long_debt", year) / equity,
                     f"({_n(f.figure('short_debt', year))} + {_n(f.figure('long_debt', year))}) / {_n(equity)}")


def returns(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 3)
    year = _later_year(rng, f)
    name, item = rng.choice((("return on equity", "total_equity"), ("return on assets", "total_assets")))
    income = f.figure("net_income", year)
    average = (f.figure(item, year - 1) + f.figure(item, year)) / 2
    return f, _pct(income / average * 100, ("net_income", item), ("income", "balance"),
                   f"What was the {name} in FY{year}, computed as net income divided by the average of opening and "
                   f"closing {LABELS[item].lower()}?", income / f.figure(item, year) * 100,
                   f"{_n(income)} / (({_n(f.figure(item, year - 1))} + {_n(f.figure(item, year))}) / 2)")


def free_cash_flow(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 3)
    year = rng.choice(f.years)
    cfo, capex = f.figure("cfo", year), f.figure("capex", year)  # capex is shown negative
    return f, _amount(f, cfo + capex, ("cfo", "capex"), ("cash_flow",),
                      f"What was free cash flow (net cash provided by operating activities minus capital expenditures) "
                      f"in FY{year}?", cfo - capex, formula=f"{_n(cfo)} - {_n(-capex)}")


def segment_share(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 3, segments=True)
    seg = rng.choice(f.segments)
    year, revenue = f.latest, f.figure("revenue", f.latest)
    if rng.random() < 0.5:
        income = sum(s.operating_income for s in f.segments)
        return f, _pct(seg.revenue / revenue * 100, ("revenue",), ("segments",),
                       f"What share of total FY{year} revenue came from the {seg.name} segment?",
                       seg.operating_income / income * 100, f"{_n(seg.revenue)} / {_n(revenue)}")
    return f, _pct(seg.operating_income / seg.revenue * 100, (), ("segments",),
                   f"What was the operating margin of the {seg.name} segment (segment operating income as a percentage "
                   f"of segment revenue) in FY{year}?", seg.operating_income / revenue * 100,
                   f"{_n(seg.operating_income)} / {_n(seg.revenue)}")


def working_capital(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 4)
    year = _later_year(rng, f)

    def nwc(y: int, operating: bool) -> int:
        assets = f.figure("current_assets", y) - (f.figure("cash", y) if operating else 0)
        return assets - (f.figure("current_liabilities", y) - (f.figure("short_debt", y) if operating else 0))

    def shown(y: int) -> str:
        return (f"(({_n(f.figure('current_assets', y))} - {_n(f.figure('cash', y))}) - "
                f"({_n(f.figure('current_liabilities', y))} - {_n(f.figure('short_debt', y))}))")

    return f, _amount(f, nwc(year, True) - nwc(year - 1, True), ("current_assets", "cash", "current_liabilities",
                      "short_debt"), ("balance",),
                      f"By how much did operating working capital change from FY{year - 1} to FY{year}? Operating "
                      f"working capital is current assets excluding cash minus current liabilities excluding "
                      f"short-term debt; give the change (negative for a decrease).",
                      nwc(year, False) - nwc(year - 1, False), formula=f"{shown(year)} - {shown(year - 1)}")


def implied_dividends(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 4)
    year = _later_year(rng, f)
    income, change = f.figure("net_income", year), f.figure("retained", year) - f.figure("retained", year - 1)
    return f, _amount(f, income - change, ("net_income", "retained"), ("income", "balance"),
                      f"Reconcile retained earnings for FY{year}: closing retained earnings equal opening retained "
                      f"earnings plus net income minus dividends. What dividends does this imply for FY{year}?", change,
                      formula=f"{_n(income)} - ({_n(f.figure('retained', year))} - "
                              f"{_n(f.figure('retained', year - 1))})")


def restated_growth(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 4, restatement=True)
    year = f.restatement.year + 1
    value, _ = _growth(f, "revenue", year)
    unrestated = (f.values["revenue"][year] / f.values["revenue"][year - 1] - 1) * 100
    return f, _pct(value, ("revenue",), ("income", "note:restatement"), f"By what percentage did revenue change from "
                   f"FY{year - 1} to FY{year}?", unrestated, _change(f, "revenue", year))


def balance_check(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 4)
    year = rng.choice(f.years)
    difference = 0
    if rng.random() < 0.5:
        f, difference = plant_imbalance(rng, f, year)
    unit = f.unit
    return f, Gold(f"Does the balance sheet at the end of FY{year} balance, i.e. do total assets equal total "
                   f"liabilities and equity? Cite the difference between total assets and total liabilities and "
                   f"equity in {unit} (0 if it balances).", abs(difference), unit, 0.005, 0.5,
                   verdict=difference == 0, sources=("balance",), rows=("total_assets", "total_le"))


def adjusted_margin(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 5, restructuring=True)
    year, revenue = f.latest, f.figure("revenue", f.latest)
    income = f.figure("operating_income", year)
    return f, _pct((income + f.restructuring) / revenue * 100, ("operating_income", "revenue"),
                   ("income", "note:restructuring"), f"What was the adjusted operating margin in FY{year}, i.e. "
                   f"operating income excluding the one-time restructuring charge described in the notes, as a "
                   f"percentage of revenue?", income / revenue * 100,
                   f"({_n(income)} + {_n(f.restructuring)}) / {_n(revenue)}")


def covenant(rng: random.Random) -> tuple[Filing, Gold]:
    f = _filing(rng, 5, restructuring=rng.random() < 0.5)
    year = f.latest
    ratio = leverage(f, year)
    breach = rng.random() < 0.5
    steps = [s / 4 for s in range(4, 21)]  # 1.00x .. 5.00x
    limits = [s for s in steps if (ratio > s) == breach and abs(ratio - s) >= 0.1] or \
        [s for s in steps if (ratio > s) != breach and abs(ratio - s) >= 0.1]
    limit = rng.choice(limits[-3:] if ratio > limits[0] else limits[:3])
    f = replace(f, covenant_max=limit)
    return f, Gold(f"The credit agreement requires total debt (short-term plus long-term) to Consolidated EBITDA, as "
                   f"defined in the agreement (see the debt note), of at most {limit:.2f}x at the end of FY{year}. "
                   f"Is the covenant breached? Cite the ratio.", ratio, RATIO, 0.0, 0.01, verdict=ratio > limit,
                   sources=("income", "balance", "note:debt") + (("note:restructuring",) if f.restructuring else ()),
                   rows=("short_debt", "long_debt", "operating_income", "da"))


Family = Callable[[random.Random], tuple[Filing, Gold]]
FAMILIES: dict[str, tuple[int, Family]] = {  # name -> (difficulty level, generator)
    "lookup": (1, lookup),
    "unit_conversion": (2, unit_conversion), "growth": (2, growth), "margin": (2, margin),
    "current_ratio": (2, current_ratio),
    "debt_to_equity": (3, debt_to_equity), "returns": (3, returns), "free_cash_flow": (3, free_cash_flow),
    "segment_share": (3, segment_share),
    "working_capital": (4, working_capital), "implied_dividends": (4, implied_dividends),
    "restated_growth": (4, restated_growth), "balance_check": (4, balance_check),
    "adjusted_margin": (5, adjusted_margin), "covenant": (5, covenant),
}


@dataclass(frozen=True)
class Case:
    """A task's reference: the filing as displayed and the question with its gold answer."""

    filing: Filing
    gold: Gold
