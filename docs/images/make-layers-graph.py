"""Draw the import graph of the project's folders: docs/images/layers.dot and, with Graphviz, layers.svg.

Run from the repository's root: ``python docs/images/make-layers-graph.py``.
The edges come from the code itself, through the same scan as the layers test
(``tests/test_layers.py``: every ``import`` of a project module, at the top,
in a function or under ``TYPE_CHECKING``); each box is a folder, placed in the
row of its layer (``FOLDER_LAYERS``), and an arrow from one folder to another
says how many imports run that way. An arrow that points up a layer would be
drawn red (the test fails on it, so there is none). The SVG needs Graphviz's
``dot`` (Debian: ``apt-get install graphviz``); without it only the ``.dot``
file is written.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.test_layers import FOLDER_LAYERS, import_edges, layer_of  # noqa: E402 (after the path)

OUT = REPO / "docs" / "images"
LAYER_NAMES = {0: "rules, wire", 1: "compute core, results, runtime", 2: "players", 3: "dealer",
               4: "application", 5: "command line"}


def folder(module: str) -> str:
    """The folder (package) a dotted module name lives in: ``acpc_lbr.app.evaluate.run`` ->
    ``acpc_lbr/app/evaluate``; a package is its own folder."""
    parts = module.split(".")
    path = REPO.joinpath(*parts)
    return "/".join(parts if path.is_dir() else parts[:-1]) or parts[0]


def dot_text() -> str:
    """The graph in Graphviz's language: one box per folder, one row per layer, counted arrows."""
    counts: Counter[tuple[str, str]] = Counter()
    layer: dict[str, int] = {}
    for edge in import_edges():
        source, target = folder(edge.source), folder(edge.target)
        layer[source], layer[target] = layer_of(edge.source), layer_of(edge.target)
        if source != target:
            counts[(source, target)] += 1
    # Top to bottom: the command line at the top, the rules at the bottom, so every arrow points down.
    lines = ["digraph layers {", '  rankdir=TB; newrank=true; ranksep=0.9; node [shape=box, fontname="Helvetica"];',
             '  edge [color="#555555", fontname="Helvetica", fontsize=9];']
    for rank in sorted(set(FOLDER_LAYERS.values())):
        members = sorted(f for f, n in layer.items() if n == rank)
        lines.append(f'  subgraph cluster_L{rank} {{ label="L{rank}: {LAYER_NAMES[rank]}"; '
                     'style=rounded; color="#999999"; rank=same;')
        lines += [f'    "{m}" [label="{m}/"];' for m in members]
        lines.append("  }")
    # One row per layer, in order, even between layers with no import (the dealer and the agents).
    firsts = [sorted(f for f, n in layer.items() if n == rank)[0] for rank in sorted(set(layer.values()))]
    lines += [f'  "{upper}" -> "{lower}" [style=invis];' for lower, upper in zip(firsts, firsts[1:])]
    for (source, target), n in sorted(counts.items()):
        up = layer[target] > layer[source]
        colour = ', color=red, fontcolor=red' if up else ""
        lines.append(f'  "{source}" -> "{target}" [label="{n}"{colour}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    text = dot_text()
    (OUT / "layers.dot").write_text(text)
    print(f"wrote {OUT / 'layers.dot'}")
    dot = shutil.which("dot")
    if dot is None:
        print("no Graphviz 'dot' here: layers.svg not drawn (apt-get install graphviz)", file=sys.stderr)
        return 1
    subprocess.run([dot, "-Tsvg", "-o", str(OUT / "layers.svg"), str(OUT / "layers.dot")], check=True)
    print(f"wrote {OUT / 'layers.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
