"""A report table as LaTeX (tables/<name>.tex): a booktabs table that compiles in a plain `article` with
only the packages its first line names, and fits its text width.

Which columns: the label columns, then the metric columns in the terminal table's priority
(table.choose_columns) while they fit TEXT_WIDTH; `--columns` picks them and `--wide` takes every one.
Picked columns wider than the page are split, never shrunk or overfull: the table holds several tabulars
one under the other, each repeating the label columns. Widths are estimated from Computer Modern's
glyph widths (GLYPH_PT), on the safe side; tests compile the files with pdflatex and read its log.

Every character is escaped to plain LaTeX: its specials, the report's symbols, Greek letters (η is
`$\\eta$`) and accented Latin letters; a character with no LaTeX form is written as its Unicode name
(never dropped, never a compile error)."""

from __future__ import annotations

import unicodedata

from benchmark.report.table import choose_columns
from benchmark.store.job_status import FINISHED

PACKAGES = ("booktabs",)  # named in each file's first line: \usepackage{booktabs} in the preamble
TEXT_WIDTH = 345.0  # pt: \textwidth of a plain 10 pt article (letter or A4)
COLUMN_PAD = 12.0  # pt: 2 \tabcolsep either side of a cell
BOLD = 1.15  # Computer Modern bold is up to 15 % wider than roman
SPLIT_GAP = r"\par\medskip"
USEPACKAGE = "".join(rf"\usepackage{{{p}}}" for p in PACKAGES)

_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
    "−": r"$-$",
    "—": "---",
    "–": "--",
    "†": r"$^\dagger$",
    "‡": r"$^\ddagger$",
    "✓": r"$\surd$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "≈": r"$\approx$",
    "×": r"$\times$",
    "→": r"$\to$",
    "·": r"$\cdot$",
    "…": r"\dots{}",
    "*": r"$^*$",
    ">": r"$>$",
    "<": r"$<$",
    "|": r"$|$",
    "°": r"$^\circ$",
    "²": r"$^2$",
    "′": r"$'$",
    "\u00a0": "~",
}
# capital Greek letters LaTeX has a command for; the others look like Latin capitals
_GREEK_CAPITALS = {"GAMMA", "DELTA", "THETA", "LAMDA", "XI", "PI", "SIGMA", "UPSILON", "PHI", "PSI", "OMEGA"}
_LATIN_LOOKING = {"ALPHA": "A", "BETA": "B", "EPSILON": "E", "ZETA": "Z", "ETA": "H", "IOTA": "I", "KAPPA": "K"}
_LATIN_LOOKING |= {"MU": "M", "NU": "N", "OMICRON": "O", "RHO": "P", "TAU": "T", "CHI": "X"}
_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0308": '"', "\u0327": "c", "\u030c": "v"}


def _greek(name: str) -> str | None:
    """`$\\eta$` for GREEK SMALL LETTER ETA, `$\\Delta$` / `A` for capitals; None for other characters."""
    for case in ("SMALL", "CAPITAL"):
        prefix = f"GREEK {case} LETTER "
        if name.startswith(prefix):
            letter = name[len(prefix) :]
            if case == "CAPITAL" and letter not in _GREEK_CAPITALS:
                return _LATIN_LOOKING.get(letter)
            if case == "SMALL" and letter == "OMICRON":
                return "o"
            command = "lambda" if letter == "LAMDA" else letter.lower()
            return f"$\\{command.capitalize() if case == 'CAPITAL' else command}$"
    return None


def _char_tex(ch: str) -> str:
    if ch in _TEX:
        return _TEX[ch]
    if ch.isascii():
        return ch
    name = unicodedata.name(ch, f"U+{ord(ch):04X}")
    if greek := _greek(name):
        return greek
    base, *marks = unicodedata.normalize("NFD", ch)
    if base.isascii() and marks and all(m in _ACCENTS for m in marks):
        for mark in marks:
            base = f"\\{_ACCENTS[mark]}{{{base}}}"
        return base
    return f"[{name.lower()}]"


def tex_escape(text) -> str:
    return "".join(_char_tex(ch) for ch in str(text))


# Computer Modern Roman 10 pt advance widths (pt), rounded up; other characters count as DEFAULT_PT
GLYPH_PT = {
    **dict.fromkeys("0123456789/*$", 5.0),
    **dict.fromkeys(".,:;!'[]`|", 2.8),
    **dict.fromkeys("()", 3.9),
    **dict.fromkeys("+−±=<>×≥≤≈→", 7.8),
    **dict.fromkeys("%@&#", 8.4),
    " ": 3.4,
    "-": 3.4,
    "_": 5.0,
    **dict.fromkeys("abcdeghknopqsuvxyz", 5.6),
    **dict.fromkeys("fijlrt", 3.9),
    "m": 8.4,
    "w": 7.3,
    **dict.fromkeys("ABCDEFGHIJKLNOPQRSTUVXYZ", 7.7),
    "M": 9.2,
    "W": 10.3,
}
DEFAULT_PT = 8.4


def text_pt(text: str, bold: bool = False) -> float:
    """The width of `text` set in the table's font, estimated on the safe side."""
    return sum(GLYPH_PT.get(ch, DEFAULT_PT) for ch in str(text)) * (BOLD if bold else 1.0)


def header_lines(header: str, width: float) -> list[str]:
    """The header's words in lines no wider than `width` (or its widest word)."""
    lines: list[str] = []
    for word in header.split():
        if lines and text_pt(f"{lines[-1]} {word}", bold=False) <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines or [""]


def _column_width(header: str, cells, marks) -> tuple[float, list[str]]:
    """(the column's width with its padding, its header's lines)."""
    body = max((text_pt(c, bold=m) for c, m in zip(cells, marks)), default=0.0)
    lines = header_lines(header, body)
    return max(body, *(text_pt(line) for line in lines)) + COLUMN_PAD, lines


def _header_cell(lines: list[str], align: str) -> str:
    if len(lines) == 1:
        return tex_escape(lines[0])
    stacked = r" \\ ".join(tex_escape(line) for line in lines)
    return rf"\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}{stacked}\end{{tabular}}"


def _parts(metrics: list[str], widths: dict[str, float], room: float) -> list[list[str]]:
    """The metric columns in consecutive groups, each fitting `room` (a column wider than it alone)."""
    parts: list[list[str]] = [[]]
    used = 0.0
    for header in metrics:
        if parts[-1] and used + widths[header] > room:
            parts.append([])
            used = 0.0
        parts[-1].append(header)
        used += widths[header]
    return [p for p in parts if p] or [[]]


def _tabular(headers: list[str], labels: list[str], text, best, lines: dict[str, list[str]]) -> str:
    align = {h: "l" if h in labels else "r" for h in headers}
    out = [rf"\begin{{tabular}}{{{''.join(align[h] for h in headers)}}}", r"\toprule"]
    out.append(" & ".join(_header_cell(lines[h], align[h]) for h in headers) + r" \\")
    out.append(r"\midrule")
    for i in range(len(text)):  # `text` is escaped already
        cells = [rf"\textbf{{{text.iloc[i][h]}}}" if best.iloc[i][h] else text.iloc[i][h] for h in headers]
        out.append(" & ".join(cells) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(out)


def _marks_note(t) -> str:
    """What the table's marks claim (entry_tables.mark_best), where it has any."""
    cells = [row.cells[c.key] for row in t.rows for c in t.columns]
    if t.of_protocol or not any(c.best or c.tied for c in cells):
        return ""
    return ". Bold: ahead of every other row by a paired test over seeds (95% interval); ≈: tied for best"


def table_tex(t, columns: tuple[str, ...] = (), wide: bool = False) -> str:
    """The table's .tex, ready to \\input: centred, captioned, labelled `tab:<slug>`, marked cells in bold;
    no status column: a row whose jobs did not all finish gets a footnote mark and its statuses in a
    footnote under the table. Columns as the module says; the ones left out named in a comment."""
    text, best = t.display()
    text, best = text.drop(columns="status", errors="ignore"), best.drop(columns="status", errors="ignore")
    sizes = {h: _column_width(h, text[h], best[h]) for h in text.columns}
    widths = {h: w for h, (w, _) in sizes.items()}
    shown, hidden = choose_columns(t, text, columns, wide, widths.__getitem__, TEXT_WIDTH)
    shown = [h for h in shown if h in text.columns]
    labels = [h for h in shown if h in t.labels(t.rows[0])]
    marks = "abcdefghijklmnopqrstuvwxyz"
    lost = [i for i, row in enumerate(t.rows) if row.status and row.status != FINISHED]  # a protocol's: none
    escaped = text.map(tex_escape)
    for n, i in enumerate(lost):
        escaped.iloc[i, 0] += f"$^{{{marks[n % 26]}}}$"
    room = TEXT_WIDTH - sum(widths[h] for h in labels)
    parts = _parts([h for h in shown if h not in labels], widths, room)
    lines = {h: wrapped for h, (_, wrapped) in sizes.items()}
    out = [f"% needs {USEPACKAGE} in the preamble (fedbench report)"]
    if hidden:
        keys = {c.header: c.key for c in t.columns}  # ASCII, and what --columns takes
        out.append(f"% not shown: {', '.join(keys[h] for h in hidden)} (in the .csv; fedbench report --columns KEY,..)")
    out += [r"\begin{table}", r"\centering", rf"\caption{{{tex_escape(t.title + _marks_note(t))}}}"]
    out.append(rf"\label{{tab:{t.slug}}}")
    out.append(f"\n{SPLIT_GAP}\n".join(_tabular(labels + part, labels, escaped, best, lines) for part in parts))
    if lost:
        notes = "; ".join(f"$^{{{marks[n % 26]}}}$ {tex_escape(t.rows[i].status)}" for n, i in enumerate(lost))
        out.append(rf"\par\smallskip{{\footnotesize {notes}}}")
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"
