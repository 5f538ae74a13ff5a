"""A fictional company's financial statements, generated so that they tie out.

The statements are simulated forward from a hidden opening balance sheet: every year's
income statement, working capital, capital spending, borrowing and dividends produce the
cash-flow statement, and cash is whatever the cash flows leave. So, by construction:

    total assets = total liabilities + total equity           every year
    retained earnings(t) = retained earnings(t-1) + net income - dividends
    cash at end of year (cash flow) = cash (balance sheet); cash at beginning = last year's

`inconsistencies()` checks those ties (and every subtotal) on the figures as displayed;
it is empty for every generated filing except one with a deliberately planted imbalance
(`Filing.planted`). All figures are integers in the filing's reporting unit (plain currency
units for a company under about 5 million of revenue, thousands up to about 1 billion,
millions above), exactly what the tables show, so gold answers computed from them are what
a careful reader computes. How the tables print them (names, order, signs, style) is the
filing's `layout` (layout.py), which no figure depends on.

A restatement (revenue and cost of revenue of a prior year revised by the same amount, the
net presentation of pass-through costs) leaves gross profit and everything below it, the
balance sheet and the cash flows unchanged; the tables keep the originally reported
figures and a note gives the restated ones, which `Filing.figure` returns.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from tempering.envs.finance.layout import CLASSIC, NAMINGS, Layout

CURRENCIES = ("USD", "USD", "USD", "EUR", "GBP", "CAD", "CHF")
SCALES = {"ones": 1, "thousands": 1_000, "millions": 1_000_000, "billions": 1_000_000_000}
REPORTING_SCALES = ("thousands", "thousands", "millions", "millions", "ones")
"""Drawn uniformly; each scale has its own range of company size (_REVENUE, the first year's revenue)."""
_REVENUE = {"ones": (500_000, 4_000_000), "thousands": (40_000, 900_000), "millions": (1_000, 60_000)}

INDUSTRIES = {  # industry -> (segment names, what it sells)
    "industrial machinery": (("Equipment", "Aftermarket Services", "Automation"), "machine tools and spare parts"),
    "packaged foods": (("Snacks", "Beverages", "Foodservice"), "snacks, beverages and foodservice products"),
    "enterprise software": (("Cloud Subscriptions", "Licenses", "Professional Services"), "business software"),
    "specialty retail": (("Stores", "E-commerce", "Wholesale"), "home and outdoor goods"),
    "medical devices": (("Surgical", "Diagnostics", "Consumables"), "surgical and diagnostic devices"),
    "logistics": (("Freight", "Warehousing", "Brokerage"), "freight, warehousing and brokerage services"),
    "specialty chemicals": (("Coatings", "Adhesives", "Agricultural"), "coatings, adhesives and crop inputs"),
    "semiconductors": (("Analog", "Memory", "Foundry Services"), "analog and memory chips"),
}
_NAME_HEADS = ("Northwind", "Bluegate", "Corvane", "Halvorsen", "Meridian Peak", "Ostrava", "Quillon", "Redfern",
               "Silverline", "Tamsin", "Vexley", "Wrenfield", "Ardent", "Brightmoor", "Calloway", "Dunmore",
               "Eastlake", "Fairhaven", "Granite Bay", "Harrowgate", "Ironwood", "Juniper", "Kestrel", "Larkspur")
_NAME_TAILS = ("Industries", "Holdings", "Systems", "Corp.", "Group", "Technologies", "Inc.", "Partners")

INCOME = ("revenue", "cogs", "gross_profit", "sga", "rnd", "da", "operating_income", "interest", "pretax", "tax",
          "net_income")
BALANCE = ("cash", "receivables", "inventory", "current_assets", "ppe", "goodwill", "total_assets", "payables",
           "accrued", "short_debt", "current_liabilities", "long_debt", "total_liabilities", "share_capital",
           "retained", "total_equity", "total_le")
CASH_FLOW = ("net_income", "da", "d_receivables", "d_inventory", "d_payables", "d_accrued", "cfo", "capex", "cfi",
             "d_debt", "share_issuance", "dividends", "cff", "net_change", "cash_begin", "cash_end")
STATEMENTS = {"income": INCOME, "balance": BALANCE, "cash_flow": CASH_FLOW}
"""statement -> its line items, in the usual US order (layout.py names and may reorder them)."""
LABELS = NAMINGS["classic"].labels
"""The canonical line-item names: what questions and consistency checks call each item."""
PLANTABLE = ("receivables", "inventory", "ppe", "payables", "accrued")
"""Balance-sheet lines a planted error may hit (the subtotals are then recomputed)."""


@dataclass(frozen=True)
class Segment:
    name: str
    revenue: int
    operating_income: int


@dataclass(frozen=True)
class Restatement:
    """A prior year's revenue and cost of revenue, restated by the same amount."""

    year: int
    revenue: int
    cogs: int


@dataclass(frozen=True)
class Filing:
    company: str
    industry: str
    currency: str
    scale: str
    """"thousands", "millions" or "ones" (plain currency units): the unit every table reports in."""
    years: tuple[int, ...]
    """Fiscal years shown, oldest first."""
    values: dict[str, dict[int, int]]
    """line item -> fiscal year -> the figure as displayed."""
    interest_rate: float
    tax_rate: float
    covenant_max: float
    """The credit agreement's maximum total debt / Consolidated EBITDA (latest year-end)."""
    segments: tuple[Segment, ...] = ()
    """Latest year; empty when the filing has no segment note."""
    corporate: int = 0
    """Unallocated corporate costs: segment operating income minus this is operating income."""
    restatement: Restatement | None = None
    restructuring: int = 0
    """A one-time restructuring charge inside SG&A of the latest year (0: none)."""
    csv: tuple[str, ...] = ()
    """Statements the prompt shows as CSV attachments instead of Markdown tables."""
    planted: str = ""
    """Describes a deliberately planted inconsistency; empty when the filing ties out."""
    extra: dict[str, int] = field(default_factory=dict)
    """Supporting figures the notes disclose (inventory split, ...)."""
    layout: Layout = CLASSIC
    """How the statements are printed (layout.py); no figure depends on it."""

    @property
    def latest(self) -> int:
        return self.years[-1]

    @property
    def unit(self) -> str:
        """The tables' unit as an answer names it: "USD thousands", or "USD" for plain dollars."""
        return amount_unit(self.currency, self.scale)

    def figure(self, item: str, year: int) -> int:
        """A line item as the reader should use it: the restated figure where a note restates it."""
        r = self.restatement
        if r is not None and r.year == year and item in ("revenue", "cogs"):
            return r.revenue if item == "revenue" else r.cogs
        return self.values[item][year]

    def total_debt(self, year: int) -> int:
        return self.values["short_debt"][year] + self.values["long_debt"][year]

    def covenant_ebitda(self, year: int) -> int:
        """Consolidated EBITDA as the credit agreement defines it: operating income plus
        depreciation and amortization plus one-time restructuring charges."""
        charge = self.restructuring if year == self.latest else 0
        return self.values["operating_income"][year] + self.values["da"][year] + charge


def amount_unit(currency: str, scale: str) -> str:
    """An amount unit as questions and answers write it: "EUR millions", "USD"."""
    return currency if scale == "ones" else f"{currency} {scale}"


def _income_totals(v: dict[str, int]) -> None:
    v["gross_profit"] = v["revenue"] - v["cogs"]
    v["operating_income"] = v["gross_profit"] - v["sga"] - v["rnd"] - v["da"]
    v["pretax"] = v["operating_income"] - v["interest"]
    v["net_income"] = v["pretax"] - v["tax"]


def _balance_totals(v: dict[str, int]) -> None:
    v["current_assets"] = v["cash"] + v["receivables"] + v["inventory"]
    v["total_assets"] = v["current_assets"] + v["ppe"] + v["goodwill"]
    v["current_liabilities"] = v["payables"] + v["accrued"] + v["short_debt"]
    v["total_liabilities"] = v["current_liabilities"] + v["long_debt"]
    v["total_equity"] = v["share_capital"] + v["retained"]
    v["total_le"] = v["total_liabilities"] + v["total_equity"]


def _cash_totals(v: dict[str, int]) -> None:
    v["cfo"] = v["net_income"] + v["da"] + v["d_receivables"] + v["d_inventory"] + v["d_payables"] + v["d_accrued"]
    v["cfi"] = v["capex"]
    v["cff"] = v["d_debt"] + v["share_issuance"] + v["dividends"]
    v["net_change"] = v["cfo"] + v["cfi"] + v["cff"]
    v["cash_end"] = v["cash_begin"] + v["net_change"]


def company_name(rng: random.Random) -> str:
    return f"{rng.choice(_NAME_HEADS)} {rng.choice(_NAME_TAILS)}"


@dataclass(frozen=True)
class _Drivers:
    """The company's hidden operating ratios, drawn once per filing."""
    gm: float
    rnd_pct: float
    ar_pct: float
    inv_pct: float
    ap_pct: float
    acc_pct: float
    capex_pct: float
    dep_rate: float
    rate: float
    tax_rate: float
    st_frac: float
    payout: float


def generate_filing(rng: random.Random, n_years: int, *, segments: bool = False, restatement: bool = False,
                    restructuring: bool = False) -> Filing:
    """A consistent filing with `n_years` fiscal years (2-4)."""
    industry = rng.choice(sorted(INDUSTRIES))
    scale = rng.choice(REPORTING_SCALES)
    rev = rng.randint(*_REVENUE[scale])
    gm, rnd_pct = rng.uniform(0.32, 0.65), rng.uniform(0.005, 0.06)
    ar_pct, inv_pct, ap_pct, acc_pct = (rng.uniform(0.08, 0.2), rng.uniform(0.1, 0.3),
                                        rng.uniform(0.08, 0.18), rng.uniform(0.03, 0.08))
    capex_pct, dep_rate = rng.uniform(0.03, 0.08), rng.uniform(0.09, 0.13)
    rate, tax_rate, st_frac = rng.uniform(0.04, 0.08), rng.uniform(0.18, 0.28), rng.uniform(0.05, 0.2)
    payout = 0.0 if rng.random() < 0.2 else rng.uniform(0.1, 0.6)
    d = _Drivers(gm, rnd_pct, ar_pct, inv_pct, ap_pct, acc_pct, capex_pct, dep_rate, rate, tax_rate, st_frac, payout)

    prev = _opening_balance(rng, rev, d)
    last = rng.randint(2019, 2025)
    years = tuple(range(last - n_years + 1, last + 1))
    values: dict[str, dict[int, int]] = {}
    charge = 0
    for year in years:
        rev = round(rev * (1 + rng.uniform(-0.06, 0.22)))
        v, charge = _simulate_year(rng, prev, rev, d, restructuring=restructuring and year == last)
        for key, amount in v.items():
            if key != "debt":
                values.setdefault(key, {})[year] = amount
        prev = v

    filing = Filing(company=company_name(rng), industry=industry, currency=rng.choice(CURRENCIES), scale=scale,
                    years=years, values=values, interest_rate=rate, tax_rate=tax_rate, covenant_max=0.0,
                    restructuring=charge,
                    extra={"finished_goods": round(values["inventory"][last] * rng.uniform(0.5, 0.8))})
    filing = replace(filing, covenant_max=compliant_covenant(filing))
    if segments:
        filing = _with_segments(rng, filing)
    if restatement:
        year = rng.choice(years[:-1])
        cut = round(values["revenue"][year] * rng.uniform(0.03, 0.08))
        restated = Restatement(year, values["revenue"][year] - cut, values["cogs"][year] - cut)
        filing = replace(filing, restatement=restated)
    return filing


def _opening_balance(rng: random.Random, rev: int, d: _Drivers) -> dict[str, int]:
    """The hidden balance sheet before the first year; retained earnings (then cash) make it balance."""
    cogs = round(rev * (1 - d.gm))
    o = {"receivables": round(rev * d.ar_pct), "inventory": round(cogs * d.inv_pct), "payables": round(cogs * d.ap_pct),
         "accrued": round(rev * d.acc_pct), "ppe": round(rev * rng.uniform(0.2, 0.5)),
         "goodwill": round(rev * rng.uniform(0.0, 0.35)), "share_capital": round(rev * rng.uniform(0.1, 0.4)),
         "cash": round(rev * rng.uniform(0.05, 0.2)),
         "debt": round(rev * rng.uniform(0.12, 0.2) * rng.uniform(0.3, 4.0))}  # 0.3-4x a rough EBITDA
    other = o["receivables"] + o["inventory"] + o["ppe"] + o["goodwill"] - o["payables"] - o["accrued"] - o["debt"]
    o["retained"] = o["cash"] + other - o["share_capital"]
    if o["retained"] < rev * 0.05:
        o["cash"] += round(rev * 0.05) - o["retained"]
        o["retained"] = o["cash"] + other - o["share_capital"]
    return o


def _simulate_year(rng: random.Random, prev: dict[str, int], rev: int, d: _Drivers,
                   restructuring: bool) -> tuple[dict[str, int], int]:
    """One fiscal year's statements from the year before, and its restructuring charge:
    income, then working capital and cash, borrowing enough to keep a cash cushion; the
    balance sheet must balance."""
    v: dict[str, int] = {}
    v["revenue"], v["cogs"] = rev, round(rev * (1 - d.gm + rng.uniform(-0.02, 0.02)))
    v["da"], v["rnd"] = round(prev["ppe"] * d.dep_rate), round(rev * d.rnd_pct)
    gross = v["revenue"] - v["cogs"]
    margin = min(rng.uniform(0.06, 0.2), (gross - v["rnd"] - v["da"]) / rev - 0.05)
    charge = round(rev * rng.uniform(0.01, 0.035)) if restructuring else 0
    income = round(rev * margin) - charge
    v["sga"] = gross - v["rnd"] - v["da"] - income
    v["interest"] = min(round(prev["debt"] * d.rate), round(income * 0.3))  # keep pre-tax income positive
    v["tax"] = round((income - v["interest"]) * d.tax_rate)
    _income_totals(v)

    capex = round(rev * d.capex_pct)
    v.update(receivables=round(rev * d.ar_pct * rng.uniform(0.95, 1.05)),
             inventory=round(v["cogs"] * d.inv_pct * rng.uniform(0.95, 1.05)),
             payables=round(v["cogs"] * d.ap_pct * rng.uniform(0.95, 1.05)),
             accrued=round(rev * d.acc_pct * rng.uniform(0.95, 1.05)),
             ppe=prev["ppe"] + capex - v["da"], goodwill=prev["goodwill"])
    issuance = round(rev * rng.uniform(0.005, 0.02)) if rng.random() < 0.25 else 0
    dividends = round(v["net_income"] * d.payout)
    v["share_capital"] = prev["share_capital"] + issuance
    v["retained"] = prev["retained"] + v["net_income"] - dividends
    debt = max(0, prev["debt"] + round(prev["debt"] * rng.uniform(-0.15, 0.15)))
    v.update(d_receivables=prev["receivables"] - v["receivables"], d_inventory=prev["inventory"] - v["inventory"],
             d_payables=v["payables"] - prev["payables"], d_accrued=v["accrued"] - prev["accrued"],
             capex=-capex, share_issuance=issuance, dividends=-dividends, cash_begin=prev["cash"],
             d_debt=debt - prev["debt"])
    _cash_totals(v)
    if v["cash_end"] < round(rev * 0.02):  # borrow enough to keep a cash cushion
        extra = round(rev * 0.04) - v["cash_end"]
        debt += extra
        v["d_debt"] += extra
        _cash_totals(v)
    v["cash"], v["debt"] = v["cash_end"], debt
    v["short_debt"] = round(debt * d.st_frac)
    v["long_debt"] = debt - v["short_debt"]
    _balance_totals(v)
    assert v["total_assets"] == v["total_le"], "the simulation must balance"
    return v, charge


def leverage(filing: Filing, year: int) -> float:
    """Total debt / Consolidated EBITDA: the covenant's ratio."""
    return filing.total_debt(year) / filing.covenant_ebitda(year)


def compliant_covenant(filing: Filing) -> float:
    """A covenant maximum comfortably above the latest year's leverage (the note can then
    truthfully say the company complied)."""
    ratio = leverage(filing, filing.latest)
    return max(2.5, (int(ratio * 4) + 3) / 4)


def _with_segments(rng: random.Random, filing: Filing) -> Filing:
    names = INDUSTRIES[filing.industry][0][:rng.choice((2, 3))]
    year = filing.latest
    revenue, income = filing.values["revenue"][year], filing.values["operating_income"][year]
    corporate = round(income * rng.uniform(0.05, 0.15))
    rev_w = [rng.uniform(1, 3) for _ in names]
    inc_w = [w * rng.uniform(0.6, 1.4) for w in rev_w]
    revs = [round(revenue * w / sum(rev_w)) for w in rev_w[:-1]]
    incs = [round((income + corporate) * w / sum(inc_w)) for w in inc_w[:-1]]
    revs.append(revenue - sum(revs))
    incs.append(income + corporate - sum(incs))
    return replace(filing, segments=tuple(Segment(n, r, i) for n, r, i in zip(names, revs, incs)), corporate=corporate)


def plant_imbalance(rng: random.Random, filing: Filing, year: int) -> tuple[Filing, int]:
    """The filing with one balance-sheet line of `year` misstated (two digits transposed,
    or a typo'd amount) and the subtotals recomputed, so total assets no longer equal total
    liabilities and equity. Returns it and total assets minus total liabilities and equity."""
    item = rng.choice(PLANTABLE)
    old = filing.values[item][year]
    digits = str(old)
    swaps = [i for i in range(len(digits) - 1) if digits[i] != digits[i + 1] and (i or digits[1] != "0")]
    if swaps and rng.random() < 0.6:
        i = rng.choice(swaps)
        new = int(digits[:i] + digits[i + 1] + digits[i] + digits[i + 2:])
    else:
        new = old + rng.choice((-1, 1)) * max(1, round(old * rng.uniform(0.02, 0.1)))
    v = {k: dict(per_year) for k, per_year in filing.values.items()}
    row = {k: per_year[year] for k, per_year in v.items()}
    row[item] = new
    _balance_totals(row)
    for key, amount in row.items():
        v[key][year] = amount
    label = LABELS[item]
    return replace(filing, values=v, planted=f"FY{year} {label} misstated as {new} (should be {old})"), \
        row["total_assets"] - row["total_le"]


def inconsistencies(filing: Filing) -> list[str]:
    """Every way the displayed statements fail to tie out (empty when they all do)."""
    problems = []
    for i, year in enumerate(filing.years):
        shown = {k: per_year[year] for k, per_year in filing.values.items()}
        recomputed = dict(shown)
        for totals in (_income_totals, _balance_totals, _cash_totals):
            totals(recomputed)
        problems += [f"FY{year}: {LABELS[k]} is {shown[k]}, its components give {recomputed[k]}"
                     for k in recomputed if recomputed[k] != shown[k]]
        if shown["total_assets"] != shown["total_le"]:
            problems.append(f"FY{year}: total assets {shown['total_assets']} != total liabilities and equity "
                            f"{shown['total_le']}")
        if shown["cash_end"] != shown["cash"]:
            problems.append(f"FY{year}: cash-flow ending cash {shown['cash_end']} != balance-sheet cash "
                            f"{shown['cash']}")
        if i:
            before = filing.years[i - 1]
            if shown["cash_begin"] != filing.values["cash"][before]:
                problems.append(f"FY{year}: beginning cash {shown['cash_begin']} != FY{before} cash")
            rolled = filing.values["retained"][before] + shown["net_income"] + shown["dividends"]
            if shown["retained"] != rolled:
                problems.append(f"FY{year}: retained earnings {shown['retained']} != prior + net income - dividends "
                                f"({rolled})")
    if filing.segments:
        year = filing.latest
        if sum(s.revenue for s in filing.segments) != filing.values["revenue"][year]:
            problems.append("segment revenue does not sum to revenue")
        segment_income = sum(s.operating_income for s in filing.segments)
        if segment_income - filing.corporate != filing.values["operating_income"][year]:
            problems.append("segment operating income less corporate costs does not equal operating income")
    return problems
