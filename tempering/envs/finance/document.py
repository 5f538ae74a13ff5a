"""The long filing of finance/filings-long-v1 and the two tools that read it.

The document is a 10-K-shaped report: business, risk factors, MD&A, the three statements
(in the filing's layout: its order, titles, names and table style), notes 1-15 (note 1 is always the basis of presentation; the other topics come in a
per-filing order), segment information, controls and exhibits. Its length grows with the
question's level (`target_chars`); the bulk is boilerplate (boilerplate.py), the figures
sit in the statements and a few notes. It is a pure function of the task's reference,
built on demand: tasks stay small, and the prompt needs only `outline`.

    search("words")          the SEARCH_RESULTS sections whose best line matches the most
                             (rarest first) query words, each with its best lines. Words
                             match on their first six letters, so "restated" finds
                             "restatement".
    read_section("id", p)    page p (from 1) of a section, PAGE_CHARS characters a page,
                             cut at line ends.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field

from tempering.envs.finance import boilerplate as bp
from tempering.envs.finance.filing import INDUSTRIES
from tempering.envs.finance.questions import Case
from tempering.envs.finance.render import mdna, notes, statement_title, table, unit_label

PAGE_CHARS = 4000
SEARCH_RESULTS = 3
SNIPPET_CHARS = 240
_K1, _B = 1.2, 0.75  # BM25's usual term-frequency saturation and length normalisation
NOTE_TOPICS = {  # topic -> title (a second title when the filing has nothing to report under the first)
    "policies": ("Summary of significant accounting policies",),
    "revenue": ("Revenue recognition",),
    "restatement": ("Restatement of previously issued financial statements", "Recently issued accounting standards"),
    "receivables": ("Accounts receivable",),
    "inventories": ("Inventories",),
    "ppe": ("Property, plant and equipment",),
    "goodwill": ("Goodwill and intangible assets",),
    "debt": ("Debt",),
    "leases": ("Leases",),
    "taxes": ("Income taxes",),
    "equity": ("Stockholders' equity",),
    "restructuring": ("Restructuring", "Other operating matters"),
    "commitments": ("Commitments and contingencies",),
    "fair_value": ("Fair value measurements",),
    "subsequent": ("Subsequent events",),
}
STATEMENT_SECTIONS = {"income": "income-statement", "balance": "balance-sheet", "cash_flow": "cash-flow",
                      "segments": "segments"}
_STOP = {"the", "of", "and", "a", "an", "in", "to", "for", "on", "by", "what", "was", "is", "at", "or", "as", "with",
         "from", "fy", "its", "it", "be", "were", "are", "this", "that", "did", "how", "much"}


def target_chars(level: int) -> int:
    """How long the document of a level-`level` question is at least."""
    return 100_000 + 20_000 * level


def _seed(case: Case) -> str:
    return f"{case.filing.company}|{case.filing.years}|{case.gold.question}"


def note_order(case: Case) -> list[str]:
    """Note topics in note-number order."""
    rest = [t for t in NOTE_TOPICS if t != "policies"]
    random.Random(_seed(case) + "|notes").shuffle(rest)
    return ["policies"] + rest


def _note_title(case: Case, topic: str) -> str:
    titles = NOTE_TOPICS[topic]
    f = case.filing
    has = {"restatement": f.restatement is not None, "restructuring": bool(f.restructuring)}.get(topic, True)
    return titles[0] if has else titles[-1]


def outline(case: Case) -> list[tuple[str, str]]:
    """The table of contents: (section id, title), in document order (the statements in the
    layout's order, under the layout's titles)."""
    lay = case.filing.layout
    notes_ = [(f"note-{i}", f"Note {i}. {_note_title(case, t)}") for i, t in enumerate(note_order(case), 1)]
    statements = [(STATEMENT_SECTIONS[key], f"Item 8. {lay.title(key)}") for key in lay.statements]
    return ([("business", "Item 1. Business"), ("risk-factors", "Item 1A. Risk factors"),
             ("properties", "Item 2. Properties"), ("legal", "Item 3. Legal proceedings"),
             ("mdna", "Item 7. Management's discussion and analysis"),
             ("market-risk", "Item 7A. Quantitative and qualitative disclosures about market risk")]
            + statements + notes_
            + ([("segments", "Segment information")] if case.filing.segments else [])
            + [("controls", "Item 9A. Controls and procedures"), ("exhibits", "Item 15. Exhibits")])


def source_sections(case: Case) -> tuple[str, ...]:
    """The section ids that hold the figures the question needs."""
    order = note_order(case)
    return tuple(f"note-{order.index(s.split(':')[1]) + 1}" if s.startswith("note:") else STATEMENT_SECTIONS[s]
                 for s in case.gold.sources)


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    text: str

    def pages(self) -> list[str]:
        pages, page = [], ""
        for line in self.text.split("\n"):
            for piece in [line[i:i + PAGE_CHARS] for i in range(0, len(line), PAGE_CHARS)] or [""]:
                if page and len(page) + 1 + len(piece) > PAGE_CHARS:
                    pages.append(page)
                    page = piece
                else:
                    page = f"{page}\n{piece}" if page else piece
        return pages + [page]


def _stems(text: str) -> list[str]:
    return [w[:6] for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP]


@dataclass
class Document:
    sections: tuple[Section, ...]
    _lines: list[tuple[int, str, Counter]] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return sum(len(s.text) for s in self.sections)

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.id == section_id), None)

    def search(self, query: str) -> str:
        """Sections ranked by their best line (BM25 over lines, idf over sections) plus the
        weight of the query words in their title."""
        terms = set(_stems(query))
        if not terms:
            return 'Tool error: search needs at least one word to look for, e.g. search("restated revenue").'
        if not self._lines:
            self._lines = [(i, line, Counter(_stems(line))) for i, s in enumerate(self.sections)
                           for line in s.text.split("\n") if line.strip()]
        present: dict[str, set[int]] = {}
        for i, _, counts in self._lines:
            for t in terms.intersection(counts):
                present.setdefault(t, set()).add(i)
        idf = {t: math.log(1 + len(self.sections) / len(ids)) for t, ids in present.items()}
        mean = sum(sum(c.values()) for _, _, c in self._lines) / len(self._lines)
        best: dict[int, list[tuple[float, str]]] = {}
        for i, line, counts in self._lines:
            norm = _K1 * (1 - _B + _B * sum(counts.values()) / mean)
            score = sum(idf[t] * counts[t] * (_K1 + 1) / (counts[t] + norm) for t in terms.intersection(counts))
            if score:
                best.setdefault(i, []).append((score, line))
        rank = {i: max(sc for sc, _ in lines) + sum(idf.get(t, 0.0) for t in terms.intersection(
            _stems(self.sections[i].title))) for i, lines in best.items()}
        ranked = sorted(rank, key=lambda i: (-rank[i], i))[:SEARCH_RESULTS]
        if not ranked:
            return f"No section matches {query!r}. Try other words, or read a section from the table of contents."
        out = [f"Top {len(ranked)} sections for {query!r}:"]
        for n, i in enumerate(ranked, 1):
            s = self.sections[i]
            out.append(f"{n}. {s.id}: {s.title}")
            lines = dict.fromkeys(line for _, line in sorted(best[i], key=lambda x: -x[0]))  # best first, no repeats
            out += [f"   ...{_snippet(line, terms)}..." for line in list(lines)[:2]]
        out.append('Read one with read_section("<id>").')
        return "\n".join(out)

    def read(self, section_id: str, page: int = 1) -> str:
        s = self.section(section_id)
        if s is None:
            ids = ", ".join(x.id for x in self.sections)
            return f"Tool error: there is no section {section_id!r}. Section ids: {ids}."
        pages = s.pages()
        if not 1 <= page <= len(pages):
            return f"Tool error: section {section_id!r} has {len(pages)} page(s); ask for page 1 to {len(pages)}."
        more = f"\n\n(continues: read_section(\"{s.id}\", {page + 1}))" if page < len(pages) else ""
        return f"[{s.id}] {s.title} (page {page} of {len(pages)})\n\n{pages[page - 1]}{more}"


def _snippet(line: str, terms: set[str]) -> str:
    if len(line) <= SNIPPET_CHARS:
        return line
    low = line.lower()
    at = min((low.find(t) for t in terms if low.find(t) >= 0), default=0)
    start = max(0, at - SNIPPET_CHARS // 3)
    return line[start:start + SNIPPET_CHARS]


def build_document(case: Case, level: int) -> Document:
    f, gold = case.filing, case.gold
    rng = random.Random(_seed(case))
    fields = {"company": f.company, "industry": f.industry, "products": INDUSTRIES[f.industry][1],
              "currency": f.currency}
    y, v, unit, amount, year = f.latest, f.values, unit_label(f), f.layout.amount, f.layout.year(f.latest)

    def filler(sentences: tuple[str, ...], paragraphs: int) -> str:
        return "\n".join(bp.paragraph(rng, sentences, rng.randint(4, 7), **fields) for _ in range(paragraphs))

    short = {topic: text for topic, _, text in notes(f, gold)}
    regions = [round(v["revenue"][y] * w) for w in (0.5, 0.3)]
    regions.append(v["revenue"][y] - sum(regions))
    finished = f.extra["finished_goods"]
    note_text = {
        "policies": short["policies"] + "\n" + filler(bp.POLICY_SENTENCES, 4),
        "revenue": (f"Revenue by geography in {year} ({unit}): North America {amount(regions[0])}, Europe "
                    f"{amount(regions[1])}, rest of world {amount(regions[2])}.\n" + filler(bp.POLICY_SENTENCES, 2)),
        "restatement": short.get("restatement") or filler(bp.POLICY_SENTENCES, 2),
        "receivables": ("Accounts receivable are stated net of an allowance for credit losses. "
                        + filler(bp.POLICY_SENTENCES, 1)),
        "inventories": (f"At the end of {year}, inventories ({unit}) consisted of finished goods of {amount(finished)} "
                        f"and raw materials and work in process of {amount(v['inventory'][y] - finished)}.\n"
                        + filler(bp.POLICY_SENTENCES, 1)),
        "ppe": (f"Capital expenditures were {amount(-v['capex'][y])} and depreciation and amortization "
                f"{amount(v['da'][y])} in {year} ({unit}).\n" + filler(bp.POLICY_SENTENCES, 1)),
        "goodwill": filler(bp.POLICY_SENTENCES, 2),
        "debt": short["debt"] + "\n" + filler(bp.MARKET_SENTENCES, 1),
        "leases": filler(bp.POLICY_SENTENCES, 2),
        "taxes": short["taxes"] + "\n" + filler(bp.POLICY_SENTENCES, 1),
        "equity": filler(bp.POLICY_SENTENCES, 2),
        "restructuring": short.get("restructuring") or filler(bp.POLICY_SENTENCES, 1),
        "commitments": filler(bp.RISK_SENTENCES, 2),
        "fair_value": filler(bp.POLICY_SENTENCES, 2),
        "subsequent": f"No subsequent events required adjustment of the {year} financial statements.",
    }
    text = {
        "business": filler(bp.BUSINESS_SENTENCES, 8),
        "properties": "Our principal offices and facilities are owned or leased. " + filler(bp.BUSINESS_SENTENCES, 1),
        "legal": "From time to time we are party to legal proceedings. " + filler(bp.RISK_SENTENCES, 1),
        "mdna": "\n".join(mdna(f)) + "\n" + filler(bp.MARKET_SENTENCES + bp.BUSINESS_SENTENCES, 4),
        "market-risk": filler(bp.MARKET_SENTENCES, 3),
        **{STATEMENT_SECTIONS[key]: f"{statement_title(f, key)}\n\n{table(f, key)}" for key in f.layout.statements},
        "controls": filler(bp.CONTROL_SENTENCES, 2),
        "exhibits": "Exhibit 3.1 Articles of incorporation. Exhibit 10.1 Credit agreement. Exhibit 21 Subsidiaries. "
                    "Exhibit 31 Certifications.",
    }
    if f.segments:
        text["segments"] = f"{short['segments']}\n\n{statement_title(f, 'segments')}\n\n{table(f, 'segments')}"
    for i, topic in enumerate(note_order(case), 1):
        text[f"note-{i}"] = note_text[topic]
    rest = sum(len(t) for t in text.values())
    text["risk-factors"] = bp.risk_factors(rng, max(0, target_chars(level) - rest), **fields)
    return Document(tuple(Section(sid, title, text[sid]) for sid, title in outline(case)))
