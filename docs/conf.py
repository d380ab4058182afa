"""Sphinx configuration of pyint's documentation (built by ``./dev.sh docs``).

The site documents the *installed* pyint (``./dev.sh docs`` builds and installs it first),
never the source tree: the Fortran kernels exist only in the installed package.
At build time it
- writes the API reference from each public package's ``__all__`` (``_ext/pyint_api.py``),
- runs every study of the seed pages at its ``--quick`` size into ``_generated/studies/``
  (cached there: a rebuild reruns nothing) and lists each study's figures for its page,
- runs every example of ``../examples`` (sphinx-gallery) and puts its figures on its page,
- serves MathJax from a local copy (the site is read offline: nothing comes from a CDN).
"""
import importlib.util
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))

import pyint  # noqa: E402  (the installed package)
import pyint_api  # noqa: E402

project = "pyint"
author = "the pyint developers"
copyright = "2026, the pyint developers"
release = version = pyint.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "pyint_api",            # _ext/pyint_api.py: developer hooks off the user API pages, public bases
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_generated", "**.ipynb_checkpoints", "auto_examples/*.py",
                    "auto_examples/*.ipynb", "auto_examples/*.zip", "auto_examples/*.json"]
templates_path = ["_templates"]
myst_heading_anchors = 3
# $...$, $$...$$ and \begin{align}... in the .md pages become math nodes (rendered by MathJax)
myst_enable_extensions = ["dollarmath", "amsmath"]

autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

intersphinx_mapping = {}

html_theme = "pydata_sphinx_theme"
html_title = f"pyint {release}"
# MathJax 3 served from a local copy, never a CDN: the site is read offline.  The copy is the
# one the pinned package sphinx-mathjax-offline ships (requirements.lock, so ./dev.sh docs
# installs it); its static/mathjax/ goes to _static/mathjax/ and Sphinx loads it only on the
# pages that have math.
_MATHJAX_SPEC = importlib.util.find_spec("sphinx-mathjax-offline")
MATHJAX_DIR = os.path.join(os.path.dirname(_MATHJAX_SPEC.origin), "static") if _MATHJAX_SPEC else ""
if not os.path.isfile(os.path.join(MATHJAX_DIR, "mathjax", "tex-chtml.js")):
    raise RuntimeError("no local MathJax: install the pinned sphinx-mathjax-offline (./dev.sh setup)")
mathjax_path = "mathjax/tex-chtml.js"       # relative: under _static/
html_static_path = ["_static", MATHJAX_DIR]
html_css_files = ["pyint.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    # the page's table of contents on every page (no "show source" box)
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "getting_started": []}
html_show_sourcelink = False

# --- the example gallery: every script of ../examples runs at each build --------------
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(HERE, "..", "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",          # every example runs (all are named plot_*.py)
    "ignore_pattern": r"/_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    # no sg_execution_times pages: sphinx-gallery's table loads jQuery and DataTables from CDNs,
    # and the site is read offline (tests/test_docs.py: no page loads from the network)
    "write_computation_times": False,
    "plot_gallery": "True",
    "run_stale_examples": True,             # rerun every example at every build: pyint may have changed
}

# --- the API reference, from __all__ ----------------------------------------------------
API_PACKAGES = pyint_api.write_api_pages(HERE)

# --- the studies of the seed pages, at their --quick size -------------------------------
SEED_STUDIES = ("snakeboard_alpha", "lie_group_manipulator", "triple_pendulum_symplectic",
                "direction_vector_block", "galerkin_nonholonomic", "iftomm_benchmarks")
STUDY_OUT = os.path.join(HERE, "_generated", "studies")


def _installed_mtime():
    """The newest modification time of the installed pyint (its package and its studies)."""
    newest = 0.0
    for d, _, files in os.walk(os.path.dirname(pyint.__file__)):
        newest = max([newest] + [os.path.getmtime(os.path.join(d, f)) for f in files])
    return newest


def _run_studies():
    """Run each seed study with ``--quick`` (cases cached in STUDY_OUT) and write, per study,
    ``_generated/studies/<name>_figures.rst`` with every figure it drew.  A study whose last
    run is newer than the installed pyint is not run again."""
    pyint_cli = os.path.join(os.path.dirname(sys.executable), "pyint")
    os.makedirs(STUDY_OUT, exist_ok=True)
    installed = _installed_mtime()
    for name in SEED_STUDIES:
        figdir = os.path.join(STUDY_OUT, name)
        stamp = os.path.join(STUDY_OUT, f".{name}.done")
        if not (os.path.exists(stamp) and os.path.getmtime(stamp) > installed):
            shutil.rmtree(figdir, ignore_errors=True)            # no stale figure survives
            t0 = time.perf_counter()
            proc = subprocess.run([pyint_cli, "study", "run", name, "--quick", "--out", STUDY_OUT,
                                   "--workers", "1"], capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"pyint study run {name} --quick failed (exit {proc.returncode}):\n"
                                   f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            print(f"[pyint docs] study {name} --quick: {time.perf_counter() - t0:.1f} s")
            summary = [ln for ln in proc.stdout.splitlines()       # the printed tables, not the paths
                       if not ln.startswith(("[", "->")) and STUDY_OUT not in ln]
            with open(os.path.join(STUDY_OUT, f"{name}.txt"), "w", encoding="utf-8") as f:
                f.write("\n".join(summary).strip("\n") + "\n")
            open(stamp, "w").close()
        pngs = sorted(p for p in os.listdir(figdir) if p.endswith(".png")) if os.path.isdir(figdir) else []
        if not pngs:
            raise RuntimeError(f"study {name} --quick drew no figure in {figdir}")
        lines = []
        for png in pngs:
            caption = os.path.splitext(png)[0].replace("_", " ")
            lines += [f".. figure:: /_generated/studies/{name}/{png}", "   :width: 75%", "   :align: center", "",
                      f"   ``{png}`` ({caption})", ""]
        _write_if_changed(os.path.join(STUDY_OUT, f"{name}_figures.rst"), "\n".join(lines))


def _write_if_changed(path, text):
    """Write ``text`` unless the file holds it already (Sphinx then rebuilds nothing)."""
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


if os.environ.get("PYINT_DOCS_SKIP_STUDIES") != "1":
    _run_studies()
