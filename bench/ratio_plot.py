# SPDX-License-Identifier: BSD-3-Clause
"""One plot shared by the report scripts: a speed ratio against message size
(log2 x axis), one line per configuration, with the 1.0 line (and an optional
dashed target line)."""


def plot_ratios(series, path, ylabel, title, target=None):
    """series: [(label, sizes in bytes, ratios)]; writes a PNG to `path`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 5))
    for label, sizes, ratios in series:
        ax.plot(sizes, ratios, marker=".", label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    if target is not None:
        ax.axhline(target, color="grey", linewidth=0.6, linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes, float32 sum)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
