"""A filing as text, in its layout (layout.py): statements in one of four table styles, CSV
attachments, MD&A prose and notes.

Tables show figures exactly as `Filing.values` holds them (negated on the expense lines of a
naming set with `signed_expenses`), negatives and zeros written as the layout writes them.
CSV attachments hold the same figures as plain integers. MD&A prose rounds (whole percents,
three significant figures) the way a narrative does, so it helps a reader orient but never
settles a question on its own.

The statements prompt carries what its question can need and little else: MD&A without its
liquidity boilerplate (the long report keeps it), and at levels 1-2, where nothing is
restated or adjusted, neither the debt and tax notes nor the instruction to use restated
figures. The unit is stated in note 1 and once more where the layout announces it.
"""

from __future__ import annotations

import csv
import io

from tempering.envs.finance.filing import INDUSTRIES, SCALES, STATEMENTS, Filing
from tempering.envs.finance.layout import EXPENSES, NAMINGS
from tempering.envs.finance.questions import Gold

FILE_NAMES = {"income": "income_statement.csv", "balance": "balance_sheet.csv", "cash_flow": "cash_flow.csv",
              "segments": "segments.csv"}
SUBTOTALS = {"gross_profit", "operating_income", "net_income", "current_assets", "total_assets",
             "current_liabilities", "total_liabilities", "total_equity", "total_le", "cfo", "cfi", "cff", "cash_end"}
BRIEF_LEVEL = 2
"""Up to this level the statements prompt leaves out the notes and instruction no question needs."""


def approx(f: Filing, n: int) -> str:
    """A figure as prose gives it: three significant figures in thousands, millions or billions."""
    value = abs(n) * SCALES[f.scale]
    word, div = ("billion", 1e9) if value >= 1e9 else ("million", 1e6) if value >= 1e6 else ("thousand", 1e3)
    x = value / div
    return f"{f.currency} {x:.{2 if x < 10 else 1 if x < 100 else 0}f} {word}"


def unit_label(f: Filing) -> str:
    """The tables' unit as the layout words it: "in thousands of USD", "in € millions"."""
    return f.layout.unit_phrase(f.currency, f.scale)


def _table(f: Filing, key: str) -> tuple[list[str], list[tuple[str, list[int], bool]]]:
    """(column headers, rows of (label, figures as printed, is a subtotal))."""
    lay = f.layout
    if key == "segments":
        rows = [(s.name, [s.revenue, s.operating_income], False) for s in f.segments]
        rows.append(("Corporate and unallocated costs", [0, -f.corporate], False))
        rows.append(("Total", [f.values["revenue"][f.latest], f.values["operating_income"][f.latest]], True))
        return [lay.label("revenue"), lay.label("operating_income")], rows
    naming = NAMINGS[lay.naming]
    items = naming.balance_rows if key == "balance" and naming.balance_rows else STATEMENTS[key]
    negated = set(EXPENSES) if key == "income" and naming.signed_expenses else set()
    bold = SUBTOTALS - ({"net_income"} if key == "cash_flow" else set())  # net income opens the cash flows
    years = lay.columns(f.years)
    return [lay.column(y) for y in years], [
        (lay.label(item), [-f.values[item][y] if item in negated else f.values[item][y] for y in years], item in bold)
        for item in items]


def _corner(f: Filing) -> str:
    """The header cell above the labels: the unit, where the layout announces it there."""
    return f.layout.unit_tag(f.currency, f.scale) if f.layout.unit_place == "table" else ""


def markdown_table(f: Filing, key: str) -> str:
    cols, rows = _table(f, key)
    lines = ["| " + " | ".join([_corner(f)] + cols) + " |", "|---" + "|---:" * len(cols) + "|"]
    for label, values, subtotal in rows:
        label = f"**{label}**" if subtotal and f.layout.bold else label
        lines.append("| " + " | ".join([label] + [f.layout.amount(v) for v in values]) + " |")
    return "\n".join(lines)


def _aligned_table(f: Filing, key: str, leaders: bool) -> str:
    """Figures right-aligned under their year: after dot leaders ("Revenue ....  1,234"), or
    in plain columns with a rule above each subtotal that follows its components."""
    cols, rows = _table(f, key)
    cells = [[f.layout.amount(v) for v in values] for _, values, _ in rows]
    width = max(len(label) for label, _, _ in rows) + 2
    num = max(len(c) for c in cols + [c for row in cells for c in row]) + 2

    def line(head: str, row: list[str]) -> str:
        return (head + "".join(c.rjust(num) for c in row)).rstrip()

    out = [line(_corner(f).ljust(width), cols)]
    above = True  # the header: no rule under it
    for (label, _, subtotal), row in zip(rows, cells):
        if subtotal and not above and not leaders:
            out.append(line(" " * width, ["-" * (num - 2)] * len(cols)))
        above = subtotal
        out.append(line(f"{label} ".ljust(width, ".") if leaders else label.ljust(width), row))
    return "\n".join(out)


def flat_table(f: Filing, key: str) -> str:
    """Cells one space apart, as text copied out of a PDF."""
    cols, rows = _table(f, key)
    head = " ".join([c for c in [_corner(f)] + cols if c])
    return "\n".join([head] + [" ".join([label] + [f.layout.amount(v) for v in values]) for label, values, _ in rows])


def table(f: Filing, key: str) -> str:
    """A statement (or the segment note's table) in the layout's style."""
    style = f.layout.style
    if style == "markdown":
        return markdown_table(f, key)
    if style == "flat":
        return flat_table(f, key)
    return _aligned_table(f, key, leaders=style == "leaders")


def csv_table(f: Filing, key: str) -> str:
    cols, rows = _table(f, key)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["line_item"] + cols)
    for label, values, _ in rows:
        writer.writerow([label] + values)
    return out.getvalue()


def statement_keys(f: Filing) -> list[str]:
    """The statements in the layout's order, then the segment table if the filing has one."""
    return list(f.layout.statements) + (["segments"] if f.segments else [])


def attachments(f: Filing) -> dict[str, str]:
    """Every statement as a CSV file (name -> text)."""
    return {FILE_NAMES[k]: csv_table(f, k) for k in statement_keys(f)}


def statement_title(f: Filing, key: str) -> str:
    lay = f.layout
    unit = unit_label(f) if lay.unit_place == "titles" else ""
    if key == "segments":
        return f"Segment information ({lay.year(f.latest)}" + (f", {unit})" if unit else ")")
    return lay.title(key) + (f" ({unit})" if unit else "")


def statement_block(f: Filing, key: str) -> str:
    """One statement as the prompt shows it: a table in the layout's style, or a CSV attachment."""
    if key in f.csv:
        return (f"Attachment `{FILE_NAMES[key]}` ({unit_label(f)}; negative amounts have a minus sign):\n"
                f"```csv\n{csv_table(f, key)}```")
    return table(f, key)


def mdna(f: Filing, brief: bool = False) -> list[str]:
    """Management's discussion: rounded figures and the story behind them (`brief`: without
    the liquidity boilerplate)."""
    y, v, lay = f.latest, f.values, f.layout
    products = INDUSTRIES[f.industry][1]
    paragraphs = []
    if len(f.years) > 1:
        before, after = f.figure("revenue", y - 1), f.figure("revenue", y)
        change = (after / before - 1) * 100
        restated = " restated" if f.restatement and f.restatement.year == y - 1 else ""
        paragraphs.append(
            f"Revenue {'increased' if change >= 0 else 'decreased'} about {abs(change):.0f}% to {approx(f, after)} in "
            f"{lay.year(y)} from{restated} {approx(f, before)} in {lay.year(y - 1)}, as demand for our {products} "
            f"{'strengthened' if change >= 0 else 'softened'} and pricing actions "
            f"{'held' if change >= 0 else 'did not fully offset lower volumes'}.")
    paragraphs.append(
        f"Gross margin was roughly {f.figure('gross_profit', y) / f.figure('revenue', y) * 100:.0f}% in {lay.year(y)}. "
        f"Operating income was {approx(f, v['operating_income'][y])}"
        + (f", after a one-time restructuring charge of {approx(f, f.restructuring)}" if f.restructuring else "")
        + f". Net income was {approx(f, v['net_income'][y])}.")
    paragraphs.append(
        f"Liquidity. Operating activities provided {approx(f, v['cfo'][y])} of cash in {lay.year(y)}, and we invested "
        f"{approx(f, -v['capex'][y])} in property, plant and equipment. We ended the year with "
        f"{approx(f, v['cash'][y])} of cash and cash equivalents"
        + ("." if brief else " and believe our cash, operating cash flows and available credit are sufficient to "
                             "meet our needs for at least the next twelve months."))
    return paragraphs


def notes(f: Filing, gold: Gold) -> list[tuple[str, str, str]]:
    """The notes relevant to reading the statements: (topic, title, text)."""
    y, lay = f.latest, f.layout
    signs = " Amounts shown in parentheses are negative." if lay.negatives == "parens" else ""
    out = [("policies", "Basis of presentation",
            f"The consolidated financial statements are presented {unit_label(f)}. References to {lay.year(y)} are "
            f"to the fiscal year ended {lay.year_end}, {y}.{signs}")]
    r = f.restatement
    if r is not None:
        revenue, cogs, year = lay.label("revenue"), lay.label("cogs").lower(), lay.year(r.year)
        out.append(("restatement", "Restatement of previously issued financial statements",
                    f"{revenue} and {cogs} for {year} have been restated to present certain pass-through costs net. "
                    f"{year} restated: {revenue.lower()} revised to {r.revenue:,} (previously reported "
                    f"{f.values['revenue'][r.year]:,}); {cogs} revised to {r.cogs:,} (previously reported "
                    f"{f.values['cogs'][r.year]:,}). Gross profit, operating income, net income, the balance sheet "
                    f"and cash flows were not affected. The tables in this report present {year} as originally "
                    f"reported."))
    debt = (f"Debt consists of short-term borrowings and a senior term loan with a weighted-average interest rate "
            f"of about {f.interest_rate * 100:.1f}%. The credit agreement contains a financial covenant: the ratio of "
            f"total debt (short-term plus long-term debt) to Consolidated EBITDA may not exceed "
            f"{f.covenant_max:.2f}x at any fiscal year-end. Consolidated EBITDA means operating income plus "
            f"depreciation and amortization, plus one-time restructuring charges.")
    if "note:debt" not in gold.sources:
        debt += f" The Company was in compliance with this covenant at the end of {lay.year(y)}."
    out.append(("debt", "Debt", debt))
    if f.restructuring:
        out.append(("restructuring", "Restructuring",
                    f"In {lay.year(y)} the Company recorded a one-time restructuring charge of {f.restructuring:,} "
                    f"({unit_label(f)}) for the consolidation of manufacturing and office sites. The charge is "
                    f"included in \"{lay.label('sga')}\"."))
    if f.segments:
        names = ", ".join(s.name for s in f.segments)
        out.append(("segments", "Segment information",
                    f"The Company has {len(f.segments)} reportable segments: {names}. Corporate costs are not "
                    f"allocated to the segments; segment operating income less corporate and unallocated costs "
                    f"equals consolidated operating income."))
    paid = any(f.values["dividends"][yr] for yr in f.years)
    out.append(("taxes", "Income taxes",
                f"The effective income tax rate was approximately {f.tax_rate * 100:.0f}%. "
                + ("The Company pays quarterly cash dividends; see the statements of cash flows." if paid else
                   "The Company did not pay dividends in the periods presented.")))
    return out


def answer_format(gold: Gold) -> str:
    if gold.verdict is None:
        return (f"End your reply with one line `Answer: <number> {gold.unit}` (tolerance {gold.tolerance_text}; "
                f"write a negative number with a minus sign).")
    return (f"End your reply with one line `Answer: yes (<figure> {gold.unit})` or `Answer: no (<figure> "
            f"{gold.unit})`, citing the figure asked for (tolerance {gold.tolerance_text}).")


INSTRUCTION = "Where a note restates or adjusts a figure shown in the tables, use the restated or adjusted figure."


def company_intro(f: Filing) -> str:
    """"the FY2024 annual report of X, an enterprise software company"."""
    article = "an" if f.industry[0] in "aeiou" else "a"
    return f"the {f.layout.year(f.latest)} annual report of {f.company}, {article} {f.industry} company"


def statements_prompt(f: Filing, gold: Gold, level: int) -> str:
    """The whole filing excerpt and the question (of difficulty `level`), for finance/statements-v1."""
    intro = f"Below are excerpts from {company_intro(f)}."
    if f.layout.unit_place == "intro":
        intro += f" Amounts are {unit_label(f)} unless stated otherwise."
    parts = [intro] + [f"### {statement_title(f, key)}\n{statement_block(f, key)}" for key in statement_keys(f)]
    low = level <= BRIEF_LEVEL
    parts.append("### Management's discussion and analysis (excerpt)\n" + "\n\n".join(mdna(f, brief=True)))
    shown = [(title, text) for topic, title, text in notes(f, gold) if not low or topic not in ("debt", "taxes")]
    parts.append("### Notes to the financial statements\n" + "\n\n".join(
        f"**Note {i}. {title}.** {text}" for i, (title, text) in enumerate(shown, 1)))
    instruction = "" if low else INSTRUCTION + " "
    parts.append(f"### Question\n{gold.question}\n\n{instruction}{answer_format(gold)}")
    return "\n\n".join(parts)
