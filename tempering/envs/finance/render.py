"""A filing as text: Markdown tables, CSV attachments, MD&A prose and notes.

Tables show figures exactly as `Filing.values` holds them, negatives in parentheses and
zeros as a dash, like printed statements. CSV attachments hold the same figures as plain
integers. MD&A prose rounds (whole percents, three significant figures) the way a
narrative does, so it helps a reader orient but never settles a question on its own.
"""

from __future__ import annotations

import csv
import io

from tempering.envs.finance.filing import INDUSTRIES, SCALES, STATEMENTS, Filing
from tempering.envs.finance.questions import Gold

FILE_NAMES = {"income": "income_statement.csv", "balance": "balance_sheet.csv", "cash_flow": "cash_flow.csv",
              "segments": "segments.csv"}
SUBTOTALS = {"gross_profit", "operating_income", "net_income", "current_assets", "total_assets",
             "current_liabilities", "total_liabilities", "total_equity", "total_le", "cfo", "cfi", "cff", "cash_end"}


def amount(n: int) -> str:
    if n == 0:
        return "—"
    return f"({-n:,})" if n < 0 else f"{n:,}"


def approx(f: Filing, n: int) -> str:
    """A figure as prose gives it: three significant figures in millions or billions."""
    value = abs(n) * SCALES[f.scale]
    word, div = ("billion", 1e9) if value >= 1e9 else ("million", 1e6)
    x = value / div
    return f"{f.currency} {x:.{2 if x < 10 else 1 if x < 100 else 0}f} {word}"


def unit_label(f: Filing) -> str:
    return f"in {f.scale} of {f.currency}"


def _table(f: Filing, key: str) -> tuple[list[str], list[tuple[str, list[int], bool]]]:
    """(column headers, rows of (label, figures, is a subtotal))."""
    if key == "segments":
        rows = [(s.name, [s.revenue, s.operating_income], False) for s in f.segments]
        rows.append(("Corporate and unallocated costs", [0, -f.corporate], False))
        rows.append(("Total", [f.values["revenue"][f.latest], f.values["operating_income"][f.latest]], True))
        return ["Revenue", "Operating income"], rows
    bold = SUBTOTALS - ({"net_income"} if key == "cash_flow" else set())  # net income opens the cash flows
    return [f"FY{y}" for y in f.years], [(label, [f.values[item][y] for y in f.years], item in bold)
                                         for item, label in STATEMENTS[key][1]]


def markdown_table(f: Filing, key: str) -> str:
    cols, rows = _table(f, key)
    lines = ["| " + " | ".join([""] + cols) + " |", "|---" + "|---:" * len(cols) + "|"]
    for label, values, subtotal in rows:
        cells = [amount(v) for v in values]
        if subtotal:
            label, cells = f"**{label}**", [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join([label] + cells) + " |")
    return "\n".join(lines)


def csv_table(f: Filing, key: str) -> str:
    cols, rows = _table(f, key)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["line_item"] + cols)
    for label, values, _ in rows:
        writer.writerow([label] + values)
    return out.getvalue()


def attachments(f: Filing) -> dict[str, str]:
    """Every statement as a CSV file (name -> text)."""
    keys = list(STATEMENTS) + (["segments"] if f.segments else [])
    return {FILE_NAMES[k]: csv_table(f, k) for k in keys}


def statement_title(f: Filing, key: str) -> str:
    if key == "segments":
        return f"Segment information (FY{f.latest}, {unit_label(f)})"
    return f"{STATEMENTS[key][0].capitalize()} ({unit_label(f)})"


def statement_block(f: Filing, key: str) -> str:
    """One statement as the prompt shows it: a Markdown table, or a CSV attachment."""
    if key in f.csv:
        return (f"Attachment `{FILE_NAMES[key]}` ({unit_label(f)}; negative amounts have a minus sign):\n"
                f"```csv\n{csv_table(f, key)}```")
    return markdown_table(f, key)


def mdna(f: Filing) -> list[str]:
    """Management's discussion: rounded figures and the story behind them."""
    y, v = f.latest, f.values
    products = INDUSTRIES[f.industry][1]
    paragraphs = []
    if len(f.years) > 1:
        before, after = f.figure("revenue", y - 1), f.figure("revenue", y)
        change = (after / before - 1) * 100
        restated = " restated" if f.restatement and f.restatement.year == y - 1 else ""
        paragraphs.append(
            f"Revenue {'increased' if change >= 0 else 'decreased'} about {abs(change):.0f}% to {approx(f, after)} in "
            f"FY{y} from{restated} {approx(f, before)} in FY{y - 1}, as demand for our {products} "
            f"{'strengthened' if change >= 0 else 'softened'} and pricing actions "
            f"{'held' if change >= 0 else 'did not fully offset lower volumes'}.")
    paragraphs.append(
        f"Gross margin was roughly {f.figure('gross_profit', y) / f.figure('revenue', y) * 100:.0f}% in FY{y}. "
        f"Operating income was {approx(f, v['operating_income'][y])}"
        + (f", after a one-time restructuring charge of {approx(f, f.restructuring)}" if f.restructuring else "")
        + f". Net income was {approx(f, v['net_income'][y])}.")
    paragraphs.append(
        f"Liquidity. Operating activities provided {approx(f, v['cfo'][y])} of cash in FY{y}, and we invested "
        f"{approx(f, -v['capex'][y])} in property, plant and equipment. We ended the year with "
        f"{approx(f, v['cash'][y])} of cash and cash equivalents and believe our cash, operating cash flows and "
        f"available credit are sufficient to meet our needs for at least the next twelve months.")
    return paragraphs


def notes(f: Filing, gold: Gold) -> list[tuple[str, str, str]]:
    """The notes relevant to reading the statements: (topic, title, text)."""
    y, unit = f.latest, unit_label(f)
    out = [("policies", "Basis of presentation",
            f"The consolidated financial statements are presented {unit}. FY{y} refers to the fiscal year ended "
            f"December 31, {y}. Amounts shown in parentheses are negative.")]
    r = f.restatement
    if r is not None:
        out.append(("restatement", "Restatement of previously issued financial statements",
                    f"Revenue and cost of revenue for FY{r.year} have been restated to present certain pass-through "
                    f"costs net. FY{r.year} restated: revenue revised to {r.revenue:,} (previously reported "
                    f"{f.values['revenue'][r.year]:,}); cost of revenue revised to {r.cogs:,} (previously reported "
                    f"{f.values['cogs'][r.year]:,}). Gross profit, operating income, net income, the balance sheet "
                    f"and cash flows were not affected. The tables in this report present FY{r.year} as originally "
                    f"reported."))
    debt = (f"Debt consists of short-term borrowings and a senior term loan with a weighted-average interest rate "
            f"of about {f.interest_rate * 100:.1f}%. The credit agreement contains a financial covenant: the ratio of "
            f"total debt (short-term plus long-term debt) to Consolidated EBITDA may not exceed "
            f"{f.covenant_max:.2f}x at any fiscal year-end. Consolidated EBITDA means operating income plus depreciation and amortization, plus one-time "
            f"restructuring charges.")
    if "note:debt" not in gold.sources:
        debt += f" The Company was in compliance with this covenant at the end of FY{y}."
    out.append(("debt", "Debt", debt))
    if f.restructuring:
        out.append(("restructuring", "Restructuring",
                    f"In FY{y} the Company recorded a one-time restructuring charge of {f.restructuring:,} "
                    f"({unit}) for the consolidation of manufacturing and office sites. The charge is included in selling, general "
                    f"and administrative expenses."))
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


def statements_prompt(f: Filing, gold: Gold) -> str:
    """The whole filing excerpt and the question, for finance/statements-v1."""
    parts = [f"Below are excerpts from the FY{f.latest} annual report of {f.company}, a {f.industry} company. "
             f"Amounts are {unit_label(f)} unless stated otherwise."]
    for key in list(STATEMENTS) + (["segments"] if f.segments else []):
        parts.append(f"### {statement_title(f, key)}\n{statement_block(f, key)}")
    parts.append("### Management's discussion and analysis (excerpt)\n" + "\n\n".join(mdna(f)))
    parts.append("### Notes to the financial statements\n" + "\n\n".join(
        f"**Note {i}. {title}.** {text}" for i, (_, title, text) in enumerate(notes(f, gold), 1)))
    parts.append(f"### Question\n{gold.question}\n\n{INSTRUCTION} {answer_format(gold)}")
    return "\n\n".join(parts)
