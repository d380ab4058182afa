"""The documentation site (docs/, built by ./dev.sh docs) and the README that points into it.

The API reference is generated from each public package's ``__all__``
(docs/_ext/pyint_api.py); these tests check that every name of ``__all__``
gets its page, using autosummary itself on the pages the site build writes, and
that the README stays a front page whose links into docs/ resolve.
"""
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: the packages whose every public name the API reference must show (pyint itself exports every
#: integrator of pyint.methods once the layout by layer is in; pyint.study is the study layer of
#: that layout: both join the generated reference as soon as they exist and define __all__)
REQUIRED = ("pyint", "pyint.models", "pyint.reference", "pyint.study", "pyint.plotting")
ALWAYS = ("pyint.models", "pyint.reference")


def _present():
    return [p for p in REQUIRED if importlib.util.find_spec(p) is not None]


def _api_module():
    spec = importlib.util.spec_from_file_location("pyint_api", ROOT / "docs" / "_ext" / "pyint_api.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_api_packages_are_the_required_ones():
    assert tuple(_api_module().PACKAGES) == REQUIRED
    assert set(ALWAYS) <= set(_present())


@pytest.mark.parametrize("package", [p for p in REQUIRED if importlib.util.find_spec(p) is not None])
def test_package_all_is_its_public_api(package):
    """__all__ exists, names only what the package has, and leaves out no public class or
    function defined in the package (so "every name of __all__ has a page" covers every
    public name; names it merely imports from elsewhere, e.g. an exception of pyint.errors in
    pyint.reference, are not its API)."""
    mod = importlib.import_module(package)
    names = list(getattr(mod, "__all__", []))
    assert names or package not in ALWAYS, f"{package} has no __all__ (the API reference is generated from it)"
    assert len(names) == len(set(names)), f"{package}.__all__ lists a name twice"
    assert not [n for n in names if not hasattr(mod, n)], f"{package}.__all__ names what it does not define"
    public = {n for n, obj in vars(mod).items()
              if not n.startswith("_") and (isinstance(obj, type) or callable(obj))
              and (getattr(obj, "__module__", None) or "").startswith(package)
              and not isinstance(obj, type(mod))}
    assert public <= set(names), f"{package}: public but not in __all__: {sorted(public - set(names))}"


def test_every_public_name_has_an_api_page(tmp_path):
    """Write the API pages as the site build does, run autosummary on them, and compare the
    generated pages with __all__, name for name."""
    from sphinx.ext.autosummary.generate import main as sphinx_autogen

    api = _api_module()
    packages = api.write_api_pages(str(tmp_path))
    assert packages == [p for p in _present() if hasattr(importlib.import_module(p), "__all__")]
    assert set(ALWAYS) <= set(packages)
    sources = [str(tmp_path / "api" / f"{p}.rst") for p in packages]
    # sphinx-autogen: autosummary's own page generation, as the site build runs it
    assert sphinx_autogen(["-i", "-o", str(tmp_path / "api" / "generated"), *sources]) in (None, 0)
    pages = {p.stem for p in (tmp_path / "api" / "generated").glob("*.rst")}
    for package in packages:
        names = importlib.import_module(package).__all__
        # a name re-exported from another listed package has its page there (one page per object)
        home = {n: api.documented_in(package, n, packages) or package for n in names}
        for n, pkg in home.items():
            assert f"{pkg}.{n}" in pages, f"{package}.{n}: no page (looked for {pkg}.{n})"
        want = {f"{package}.{n}" for n, pkg in home.items() if pkg == package}
        got = {p for p in pages if p.rsplit(".", 1)[0] == package}
        assert got == want, f"{package}: pages without a name {sorted(got - want)}, names without a page {sorted(want - got)}"
        for name in want:
            text = (tmp_path / "api" / "generated" / f"{name}.rst").read_text()
            assert re.search(r"^\.\. auto\w+:: ", text, re.M), f"{name}: its page documents nothing"


def test_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text) <= 10_000, f"README.md has {len(text)} characters (at most 10 000: the rest is the site)"


def test_readme_links_into_docs_resolve():
    """Every link of the README into docs/ names a source file of the site (a .md or .rst page,
    or a gallery script), written as docs/<page>.html or docs/<page>.md."""
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(((?:\./)?(?:docs|examples)/[^)#\s]+)(?:#[^)]*)?\)", text)
    assert links, "the README links into the site"
    missing = []
    for link in links:
        path = ROOT / link.removeprefix("./")
        stem = path.with_suffix("")
        if path.exists() and path.is_file():
            continue
        if link.startswith("docs/auto_examples/"):   # a gallery page: its script in examples/
            if (ROOT / "examples" / (stem.name + ".py")).exists():
                continue
        elif any(stem.with_suffix(s).exists() for s in (".md", ".rst")):
            continue
        missing.append(link)
    assert not missing, f"README links to pages without a source file: {missing}"


def _seed_studies():
    spec = importlib.util.spec_from_file_location("seed_data", ROOT / "tools" / "seed_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SEED_STUDIES


@pytest.mark.parametrize("name", _seed_studies())
def test_seed_pages_show_default_size_runs_without_nan(name):
    """The seed pages draw from docs/seed_data/<study>.nc (tools/seed_data.py): a default-size run, not
    --quick, whose printed tables hold a number or a dash in every cell, never nan."""
    from pyint.cli import get_study
    from pyint.study.datasets import load_netcdf
    path = ROOT / "docs" / "seed_data" / f"{name}.nc"
    assert path.is_file(), f"run tools/seed_data.py {name}"
    assert path.stat().st_size < 3e6          # the repository stays lean
    ds = load_netcdf(path)
    assert ds.attrs["study"] == name and int(ds.attrs["quick"]) == 0
    study = get_study(name)
    text = study.summary(ds) if study.summary is not None else ""
    assert not re.search(r"\bnan\b", text, re.IGNORECASE), text
