"""``--plot FILE.svg|png``: the segments-per-skb distribution of each GRO stage and kernel, as bar charts.

matplotlib is an optional extra (``pip install '.[plot]'`` in the source tree); it is imported only here, and only when a
plot is asked for. The figure is built with ``matplotlib.figure.Figure`` (no pyplot, no global backend state):
one row per stage (phys NAPI, tunnel gro_cells), one column per kernel, shared axes so that bars compare.
"""

from __future__ import annotations

import os

import numpy as np

from ..capture.reader import path_words
from ..project import import_failed_words, install_extra_hint, plural
from .verdict.words import kernel_label

PLOT_FORMATS = ("svg", "png")
STAGE_TITLES = {"phys": "phys NAPI", "tunnel": "tunnel gro_cells"}


class PlotUnavailable(RuntimeError):
    """matplotlib cannot be loaded, or cannot draw the plot (one-line message: the extra to install, or the error)."""


def plot_format(path: str) -> str:
    """The output format named by ``path``'s extension (``svg`` or ``png``). Raises ValueError otherwise."""
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        raise ValueError(f"--plot {path}: the file name must end in .svg or .png")
    return ext


#: the matplotlib modules each format is written with, beyond ``segs_figure``'s own (its canvas: a C extension for
#: PNG), imported before the replay so that one broken in place is an error then, not after (breaker40)
_BACKENDS = {"svg": "matplotlib.backends.backend_svg", "png": "matplotlib.backends.backend_agg"}


def _unavailable(e: Exception, drawing: bool = False) -> PlotUnavailable:
    """The one-line error for matplotlib that cannot be loaded: missing, broken in place (a module of it missing or
    failing to load a C extension, or its import raising an AttributeError: named with its error, breaker39,
    breaker41, breaker43), or failing otherwise as it loads (a bad ``MPLBACKEND``) or draws (``drawing``:
    text.usetex without LaTeX, an rc file's empty colour cycle: breaker42, breaker43): named with its error, no
    install advice."""
    if not isinstance(e, ImportError) and (drawing or not isinstance(e, AttributeError)):  # not the install
        what = "could not draw the plot" if drawing else "cannot be loaded"
        return PlotUnavailable(f"--plot: matplotlib {what} ({type(e).__name__}: {e})")
    return PlotUnavailable(
        f"--plot needs matplotlib{import_failed_words(e, 'matplotlib')}: {install_extra_hint('plot')} (or: pip "
        "install 'matplotlib>=3.7,<4')"
    )


def require_matplotlib(fmt: str | None = None) -> None:
    """Raise PlotUnavailable when the matplotlib modules ``segs_figure`` uses, and those that write ``fmt`` (``svg``
    or ``png``; None: none), cannot be imported."""
    import importlib

    try:
        for name in (
            "matplotlib",
            "matplotlib.figure",
            "matplotlib.ticker",
            *((_BACKENDS[fmt],) if fmt else ()),
        ):
            importlib.import_module(name)
    except Exception as e:  # noqa: BLE001 - a package's import can raise anything (breaker43: AttributeError)
        raise _unavailable(e) from None


def check_plot_request(path: str | None) -> None:
    """Fail before the replay when ``--plot`` cannot work: bad extension (ValueError), no matplotlib
    (PlotUnavailable). No-op without a path."""
    if path:
        require_matplotlib(plot_format(path))


def write_plot(result, path: str, dest: str | None = None) -> None:
    """Write the segments-per-skb bar charts of ``result`` (a ``sim.Result``) to ``path`` (.svg or .png), or in
    that format to ``dest`` (e.g. a temporary file renamed to ``path`` later).

    Raises: ValueError (extension), PlotUnavailable (matplotlib, or a module it loads as it draws, cannot be
    imported), OSError (write).
    """
    fmt = plot_format(path)
    try:
        fig = segs_figure(result)
        fig.savefig(dest or path, format=fmt, dpi=110, metadata={"Date": None} if fmt == "svg" else None)
    except (OSError, PlotUnavailable):  # an OSError is the file's: said as every output's
        raise
    except Exception as e:  # noqa: BLE001 - matplotlib drawing under a user's rc or LaTeX: any error (breaker43)
        raise _unavailable(e, drawing=True) from None


def segs_figure(result):
    """A matplotlib ``Figure``: axes[row = stage][column = kernel], one bar per segment count.

    x: segments carried by one skb (``NAPI_GRO_CB(skb)->count`` at completion; 1 = not aggregated); y: skbs
    delivered with that many segments. Raises: PlotUnavailable.
    """
    require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    kernels = result.kernels
    stages = ("phys", "tunnel")
    fig = Figure(figsize=(4.2 * len(kernels) + 1, 6.4), layout="constrained")
    axes = fig.subplots(len(stages), len(kernels), sharex=True, sharey=True, squeeze=False)
    top = max((ks.stages[s].max_segs for ks in kernels for s in stages), default=1)
    xs = np.arange(1, max(top, 1) + 1)
    for col, ks in enumerate(kernels):
        for row, stage in enumerate(stages):
            st = ks.stages[stage]
            ax = axes[row][col]
            ys = st.segs_hist[1 : len(xs) + 1]
            ax.bar(xs[: len(ys)], ys, width=0.8, color="C0" if stage == "phys" else "C1")
            ax.set_title(
                f"{kernel_label(ks.name, ks.release)}, {STAGE_TITLES[stage]}\n"
                f"{st.skbs:,} {plural(st.skbs, 'skb')}, {st.mean_segs:.2f} segments/skb",
                fontsize=9,
            )
            if row == len(stages) - 1:
                ax.set_xlabel("segments per skb")
            if col == 0:
                ax.set_ylabel("skbs delivered")
            ax.grid(axis="y", alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    # as the report's sentences name it: "-" is standard input (capture/reader.py ``path_words``)
    name = os.path.basename(path_words(result.input.path)) if result.input.path else "frames"
    fig.suptitle(f"GRO segments per skb: {name}", fontsize=11)
    return fig
