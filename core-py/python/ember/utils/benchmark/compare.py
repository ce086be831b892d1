"""`Compare`: Measurements rendered as one table per label, laid out as PyTorch's `Compare` does.

Rows are (num_threads, env, sub_label or stmt), grouped under a "N threads:" separator; columns
are descriptions; each cell is a median in the table's common time unit.
"""
import enum
import math

from ember.utils.benchmark.common import Measurement, ordered_unique, select_unit, trim_sigfig, unit_to_english

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"
_WARNING_WIDTH = 7
_SEPARATOR = "  |  "


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(value):
    return math.ceil(math.log10(value)) if value > 0 else 1


def _color(segment, value, best):
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE * 2
    return segment


class _ColumnFormat:
    """How one column prints its medians: a shared width and number of decimals."""

    def __init__(self, measurements, scale, trim, highlight_warnings):
        present = [m for m in measurements if m is not None]
        digits = [_leading_digits(m.median / scale) for m in present]
        self._trim = trim
        self._scale = scale
        self._decimals = min(max(m.significant_figures - d, 0) for m, d in zip(present, digits)) if trim else 1
        self._width = max(digits) + self._decimals + (1 if self._decimals else 0)
        self._warnings = highlight_warnings and any(m.has_warnings for m in present)

    def cell(self, m):
        if m is None:
            return " " * len(self._text(1.0, 1, None))
        spread = m.iqr / m.median if m.has_warnings and m.median > 0 else None
        return self._text(m.median / self._scale, m.significant_figures, spread)

    def _text(self, value, figures, spread):
        if self._trim:
            value = trim_sigfig(value, figures)
        number = f"{value:>{self._width}.{self._decimals}f}"
        if not self._warnings:
            return number
        note = f" (! {spread * 100:.0f}%)" if spread is not None else ""
        return number + f"{note:>{_WARNING_WIDTH}}"


class _Table:
    """The measurements of one label."""

    def __init__(self, measurements, colorize, trim, highlight_warnings):
        self.label = measurements[0].label
        self.measurements = measurements
        self.colorize = colorize
        self.highlight_warnings = highlight_warnings
        self.unit, self.scale = select_unit(min(m.median for m in measurements))
        self.row_keys = sorted(ordered_unique(self._row_key(m) for m in measurements), key=lambda k: (k[0], k[1]))
        self.column_keys = ordered_unique(m.description for m in measurements)
        self.grid = self._grid()
        self.formats = [
            _ColumnFormat([row[j] for row in self.grid], self.scale, trim, highlight_warnings)
            for j in range(len(self.column_keys))
        ]

    @staticmethod
    def _row_key(m):
        return m.num_threads, m.env, m.as_row_name

    def _grid(self):
        rows = {key: i for i, key in enumerate(self.row_keys)}
        columns = {key: j for j, key in enumerate(self.column_keys)}
        grid = [[None] * len(self.column_keys) for _ in self.row_keys]
        for m in self.measurements:
            grid[rows[self._row_key(m)]][columns[m.description]] = m
        return grid

    def _thread_groups(self):
        """Row indices grouped by thread count, in row order."""
        groups = {}
        for i, (threads, _, _) in enumerate(self.row_keys):
            groups.setdefault(threads, []).append(i)
        return list(groups.values())

    def _row_names(self):
        envs = ordered_unique(m.env for m in self.measurements)
        render_env = len(envs) > 1
        env_width = (max(len(e) for e in envs) if render_env else 0) + 4
        names = []
        for group in self._thread_groups():
            previous_env = None
            for i in group:
                _, env, name = self.row_keys[i]
                env_text = f"({env})" if render_env and env != previous_env else ""
                names.append("  " + env_text.ljust(env_width) + name)
                previous_env = env
        return names

    def _best_values(self, i, group):
        row = self.grid[i]
        if self.colorize == Colorize.ROWWISE:
            best = min(m.median for m in row if m is not None)
            return [best] * len(row)
        if self.colorize == Colorize.COLUMNWISE:
            column_best = []
            for j in range(len(row)):
                medians = [self.grid[k][j].median for k in group if self.grid[k][j] is not None]
                column_best.append(min(medians) if medians else None)
            return column_best
        return [None] * len(row)

    def render(self):
        header = [""] + ["" if key is None else key for key in self.column_keys]
        body = [
            [name] + [fmt.cell(m) for fmt, m in zip(self.formats, row)]
            for name, row in zip(self._row_names(), self.grid)
        ]
        widths = [max(len(r[j]) for r in [header] + body) for j in range(len(header))]
        lines = [_SEPARATOR.join(text.center(w) for text, w in zip(header, widths))]
        overall = len(lines[0])
        for group in self._thread_groups():
            lines.append(f"{self.row_keys[group[0]][0]} threads: ".ljust(overall, "-"))
            for i in group:
                lines.append(self._render_row(body[i], widths, i, group))
        title = f"[{(' ' + (self.label or '') + ' ').center(overall - 2, '-')}]"
        footer = [f"Times are in {unit_to_english(self.unit)}s ({self.unit})."]
        if self.highlight_warnings and any(m.has_warnings for m in self.measurements):
            footer.append("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.")
        return "\n".join([title, *lines, "", *footer]) + "\n"

    def _render_row(self, cells, widths, i, group):
        parts = [cells[0].ljust(widths[0])]
        for text, width, m, best in zip(cells[1:], widths[1:], self.grid[i], self._best_values(i, group)):
            text = text.center(width)
            if m is not None and best is not None:
                text = _color(text, m.median, best)
            parts.append(text)
        return _SEPARATOR.join(parts)


class Compare:
    """A table of many Measurements, as `torch.utils.benchmark.Compare`: one block per label, rows by
    thread count, env and sub_label (or stmt), columns by description. Replicates (same task) are
    merged. `str(compare)` or `compare.print()` renders it."""

    def __init__(self, results):
        self._results = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results):
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise TypeError(f"Compare: expected Measurement objects, got {type(r).__name__}")
        self._results.extend(results)

    def trim_significant_figures(self):
        """Print each median with only the digits its spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise=False):
        """Color cells by how far they are from the best (columnwise by default) with ANSI codes."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self):
        """Mark measurements whose IQR is large relative to their median with `(! XX%)`."""
        self._highlight_warnings = True

    def __str__(self):
        return "\n".join(self._render())

    def print(self):
        print(str(self))

    def _render(self):
        by_label = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return [
            _Table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings).render()
            for group in by_label.values()
        ]
