"""How a filing is printed: table style, statement order, line-item names, units, signs and
year headers. The figures never depend on it; a reader has to.

A `Layout` is drawn per task from the task's rng. Its `name` (style/naming/order) is the
unit the splits hold out:

    train, test   a style of TRAIN_STYLES x a naming set of TRAIN_NAMINGS x an order of ORDERS
    unseen        only UNSEEN_LAYOUTS: aligned text columns (a style train never shows) with
                  IFRS names (a naming set train never shows), the same columns with the
                  usual US names, and a Markdown table with IFRS names; so the unseen split
                  measures a new style, new names, and both

The details below vary in every split: current year first or last, year headers ("FY2024",
"2024", "Fiscal 2024", "FY24"), the fiscal year-end, where the unit is announced (each
statement's title, once above the statements, or the table's header cell) and how
("in thousands of USD", "in USD millions", "in $ thousands", "USD '000", "€m"), negatives
as (1,234) or -1,234, zero as a dash or 0, and bold subtotal labels in Markdown.

Naming sets. Each renames the line items as a kind of company's filings do ("Net sales",
"Cost of goods sold", "Net earnings", "Trade receivables", "Reinvested earnings"). IFRS also
lists non-current assets and equity first on the balance sheet and prints expenses as
negatives. "Operating expenses" is not used for SG&A: research and development and
depreciation are separate lines here, so that name would mislabel it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_CLASSIC_LABELS = {
    "revenue": "Revenue", "cogs": "Cost of revenue", "gross_profit": "Gross profit",
    "sga": "Selling, general and administrative", "rnd": "Research and development",
    "da": "Depreciation and amortization", "operating_income": "Operating income", "interest": "Interest expense",
    "pretax": "Income before income taxes", "tax": "Income tax expense", "net_income": "Net income",
    "cash": "Cash and cash equivalents", "receivables": "Accounts receivable, net", "inventory": "Inventories",
    "current_assets": "Total current assets", "ppe": "Property, plant and equipment, net",
    "goodwill": "Goodwill and intangible assets", "total_assets": "Total assets", "payables": "Accounts payable",
    "accrued": "Accrued liabilities", "short_debt": "Short-term debt", "current_liabilities": "Total current liabilities",
    "long_debt": "Long-term debt", "total_liabilities": "Total liabilities",
    "share_capital": "Common stock and additional paid-in capital", "retained": "Retained earnings",
    "total_equity": "Total equity", "total_le": "Total liabilities and equity",
    "d_receivables": "Change in accounts receivable", "d_inventory": "Change in inventories",
    "d_payables": "Change in accounts payable", "d_accrued": "Change in accrued liabilities",
    "cfo": "Net cash provided by operating activities", "capex": "Capital expenditures",
    "cfi": "Net cash used in investing activities", "d_debt": "Net proceeds from (repayments of) debt",
    "share_issuance": "Proceeds from issuance of common stock", "dividends": "Dividends paid",
    "cff": "Net cash provided by (used in) financing activities", "net_change": "Net change in cash",
    "cash_begin": "Cash at beginning of year", "cash_end": "Cash at end of year",
}
EXPENSES = ("cogs", "sga", "rnd", "da", "interest", "tax")
"""Income-statement lines a naming set with `signed_expenses` prints as negatives."""


@dataclass(frozen=True)
class Naming:
    """What one kind of filing calls its statements and line items."""

    titles: tuple[str, str, str]
    """Income statement, balance sheet, cash-flow statement."""
    labels: dict[str, str]
    """line item -> its label."""
    signed_expenses: bool = False
    balance_rows: tuple[str, ...] = ()
    """Its own balance-sheet row order; empty: current assets first, as US filings do."""


def _naming(titles: tuple[str, str, str], signed_expenses: bool = False, balance_rows: tuple[str, ...] = (),
            **labels: str) -> Naming:
    return Naming(titles, {**_CLASSIC_LABELS, **labels}, signed_expenses, balance_rows)


_US_TITLES = ("Consolidated statements of operations", "Consolidated balance sheets",
              "Consolidated statements of cash flows")
NAMINGS = {
    "classic": _naming(_US_TITLES),
    "retail": _naming(
        ("Consolidated statements of earnings", "Consolidated balance sheets", "Consolidated statements of cash flows"),
        revenue="Net sales", cogs="Cost of sales", gross_profit="Gross margin",
        sga="Selling, general and administrative expenses", rnd="Product development",
        interest="Interest expense, net", pretax="Earnings before income taxes", tax="Provision for income taxes",
        net_income="Net earnings", receivables="Receivables, net", inventory="Merchandise inventories",
        ppe="Property and equipment, net", goodwill="Goodwill and other intangibles",
        accrued="Accrued expenses and other current liabilities", short_debt="Short-term borrowings",
        share_capital="Common stock and capital in excess of par value", total_equity="Total shareholders' equity",
        total_le="Total liabilities and shareholders' equity", d_receivables="Changes in receivables",
        d_inventory="Changes in merchandise inventories", d_payables="Changes in accounts payable",
        d_accrued="Changes in accrued expenses", capex="Purchases of property and equipment",
        d_debt="Net borrowings (repayments) of debt", dividends="Cash dividends paid",
        net_change="Net increase (decrease) in cash and cash equivalents",
        cash_begin="Cash and cash equivalents at beginning of year",
        cash_end="Cash and cash equivalents at end of year"),
    "services": _naming(
        ("Consolidated statements of income", "Consolidated balance sheets", "Consolidated statements of cash flows"),
        revenue="Total revenues", cogs="Cost of revenues", sga="Sales, general and administrative",
        operating_income="Income from operations", pretax="Income before provision for income taxes",
        tax="Provision for income taxes", receivables="Accounts receivable, net of allowance", inventory="Inventory",
        ppe="Property and equipment, net", goodwill="Goodwill and intangible assets, net", accrued="Accrued expenses",
        long_debt="Long-term debt, net", total_equity="Total stockholders' equity",
        total_le="Total liabilities and stockholders' equity", d_inventory="Change in inventory",
        d_accrued="Change in accrued expenses", capex="Purchases of property and equipment",
        d_debt="Proceeds from (repayment of) borrowings, net", net_change="Net increase (decrease) in cash",
        cash_begin="Cash, beginning of year", cash_end="Cash, end of year"),
    "industrial": _naming(
        ("Consolidated results of operations", "Consolidated balance sheets", "Consolidated statements of cash flows"),
        revenue="Sales", cogs="Cost of goods sold", sga="Selling and administrative expenses",
        rnd="Research, development and engineering", operating_income="Operating profit",
        pretax="Earnings before income taxes", tax="Income taxes", net_income="Net earnings",
        cash="Cash and equivalents", receivables="Trade receivables", ppe="Plant and equipment, net",
        goodwill="Goodwill and other intangible assets", payables="Trade accounts payable",
        short_debt="Short-term borrowings", share_capital="Paid-in capital", retained="Reinvested earnings",
        total_equity="Total shareholders' equity", total_le="Total liabilities and shareholders' equity",
        d_receivables="Change in trade receivables", d_payables="Change in trade accounts payable",
        cfo="Net cash from operating activities", cfi="Net cash used for investing activities",
        d_debt="Net change in borrowings", share_issuance="Issuance of common shares",
        cff="Net cash from (used for) financing activities", net_change="Increase (decrease) in cash and equivalents",
        cash_begin="Cash and equivalents, beginning of year", cash_end="Cash and equivalents, end of year"),
    "ifrs": _naming(
        ("Consolidated income statement", "Consolidated statement of financial position",
         "Consolidated statement of cash flows"), signed_expenses=True,
        balance_rows=("ppe", "goodwill", "inventory", "receivables", "cash", "current_assets", "total_assets",
                      "share_capital", "retained", "total_equity", "long_debt", "payables", "accrued", "short_debt",
                      "current_liabilities", "total_liabilities", "total_le"),
        cogs="Cost of sales", sga="Distribution and administrative expenses", rnd="Research and development costs",
        da="Depreciation and amortisation", operating_income="Operating profit", interest="Finance costs",
        pretax="Profit before tax", net_income="Profit for the year", receivables="Trade and other receivables",
        ppe="Property, plant and equipment", goodwill="Goodwill and other intangible assets",
        payables="Trade and other payables", accrued="Accruals and provisions", short_debt="Borrowings (current)",
        long_debt="Borrowings (non-current)", share_capital="Share capital and share premium",
        total_le="Total equity and liabilities",
        d_receivables="(Increase)/decrease in trade and other receivables",
        d_inventory="(Increase)/decrease in inventories", d_payables="Increase/(decrease) in trade and other payables",
        d_accrued="Increase/(decrease) in accruals and provisions", cfo="Net cash generated from operating activities",
        capex="Purchase of property, plant and equipment", d_debt="Net proceeds from/(repayment of) borrowings",
        share_issuance="Proceeds from issue of shares", dividends="Dividends paid to shareholders",
        cff="Net cash from/(used in) financing activities",
        net_change="Net increase/(decrease) in cash and cash equivalents",
        cash_begin="Cash and cash equivalents at beginning of year",
        cash_end="Cash and cash equivalents at end of year"),
}
ORDERS = {"income-first": ("income", "balance", "cash_flow"), "balance-first": ("balance", "income", "cash_flow")}
STYLES = ("markdown", "leaders", "flat", "columns")
"""markdown: a pipe table. leaders: "Label ....  1,234" lines under a header of years.
flat: cells one space apart, as text copied out of a PDF. columns: figures right-aligned
in fixed-width columns with rules above subtotals, as a printed or EDGAR text filing."""
TRAIN_STYLES = ("markdown", "leaders", "flat")
TRAIN_NAMINGS = ("classic", "retail", "services", "industrial")
UNSEEN_LAYOUTS = (("columns", "ifrs", "balance-first"), ("columns", "classic", "income-first"),
                  ("markdown", "ifrs", "balance-first"))
"""(style, naming, order) the unseen split draws; train and test never draw columns or ifrs."""

YEAR_FORMATS = ("FY{y}", "{y}", "Fiscal {y}", "FY{yy}")
YEAR_ENDS = ("December 31", "December 31", "December 31", "June 30", "September 30", "March 31")
UNIT_PLACES = ("titles", "intro", "table")
CURRENCY_NAMES = {"USD": ("$", "U.S. dollars"), "EUR": ("€", "euros"), "GBP": ("£", "pounds sterling"),
                  "CAD": ("C$", "Canadian dollars"), "CHF": ("CHF", "Swiss francs")}
_PHRASES = ("in {scale} of {code}", "in {code} {scale}", "in {scale} of {words}", "in {sym} {scale}")
_PLAIN_PHRASES = ("in {code}", "in {words}")
_TAGS = {"thousands": ("{code} thousands", "{code} '000", "{sym}'000"),
         "millions": ("{code} millions", "{code} m", "{sym}m"), "ones": ("{code}", "{sym}")}


@dataclass(frozen=True)
class Layout:
    """One filing's presentation. The default is close to the one layout every filing used
    to have: a Markdown table, US names, oldest year first, the unit in each title."""

    style: str = "markdown"
    naming: str = "classic"
    order: str = "income-first"
    newest_first: bool = False
    year_format: str = "FY{y}"
    year_end: str = "December 31"
    unit_place: str = "titles"
    """titles (each statement's title), intro (once, above the statements) or table (the header cell)."""
    wording: int = 0
    """Which phrasing of the unit (`unit_phrase`, `unit_tag`)."""
    negatives: str = "parens"
    """parens: (1,234); minus: -1,234."""
    zero: str = "—"
    bold: bool = True
    """Markdown only: subtotal labels in bold."""

    @property
    def name(self) -> str:
        return f"{self.style}/{self.naming}/{self.order}"

    @property
    def labels(self) -> dict[str, str]:
        return NAMINGS[self.naming].labels

    def label(self, item: str) -> str:
        return NAMINGS[self.naming].labels[item]

    def title(self, key: str) -> str:
        return NAMINGS[self.naming].titles[("income", "balance", "cash_flow").index(key)]

    @property
    def statements(self) -> tuple[str, ...]:
        return ORDERS[self.order]

    def columns(self, years: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(reversed(years)) if self.newest_first else years

    def column(self, year: int) -> str:
        """A year as a column header."""
        return self.year_format.format(y=year, yy=f"{year % 100:02d}")

    def year(self, year: int) -> str:
        """A year as the prose of the notes and MD&A names it."""
        return f"FY{year}" if self.year_format.startswith("FY") else f"fiscal {year}"

    def amount(self, n: int) -> str:
        if n == 0:
            return self.zero
        if n < 0:
            return f"({-n:,})" if self.negatives == "parens" else f"-{-n:,}"
        return f"{n:,}"

    def unit_phrase(self, currency: str, scale: str) -> str:
        """The unit as a phrase: "in thousands of USD", "in $ millions", "in euros"."""
        sym, words = CURRENCY_NAMES[currency]
        phrases = _PLAIN_PHRASES if scale == "ones" else _PHRASES
        return phrases[self.wording % len(phrases)].format(scale=scale, code=currency, sym=sym, words=words)

    def unit_tag(self, currency: str, scale: str) -> str:
        """The unit as a table's header cell: "USD '000", "€m"."""
        sym, _ = CURRENCY_NAMES[currency]
        tags = _TAGS[scale]
        return tags[self.wording % len(tags)].format(code=currency, sym=sym)


CLASSIC = Layout()


def draw_layout(rng: random.Random, style: str, naming: str, order: str) -> Layout:
    """A layout of the given style, naming set and order, its other details drawn from `rng`."""
    negatives = rng.choice(("parens", "parens", "minus"))
    return Layout(style, naming, order, newest_first=rng.random() < 0.5, year_format=rng.choice(YEAR_FORMATS),
                  year_end=rng.choice(YEAR_ENDS), unit_place=rng.choice(UNIT_PLACES), wording=rng.randrange(12),
                  negatives=negatives, zero=rng.choice(("—", "-", "0") if negatives == "parens" else ("—", "0")),
                  bold=rng.random() < 0.5)


def train_layout(rng: random.Random) -> Layout:
    """A layout for the train and test splits."""
    return draw_layout(rng, rng.choice(TRAIN_STYLES), rng.choice(TRAIN_NAMINGS), rng.choice(tuple(ORDERS)))


def unseen_layout(rng: random.Random) -> Layout:
    """A layout for the unseen split: one of UNSEEN_LAYOUTS."""
    return draw_layout(rng, *rng.choice(UNSEEN_LAYOUTS))
