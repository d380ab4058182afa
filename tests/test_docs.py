"""The documentation site (docs/, built by ./dev.sh docs) and the README that points into it.

The API reference is generated from each public package's ``__all__``
(docs/_ext/pyint_api.py); these tests check that every name of ``__all__``
gets its page, using autosummary itself on the pages the site build writes, and
that the README stays a front page whose links into docs/ resolve.  The
``test_site_*`` tests read the built HTML (run by ./dev.sh docs after the build):
nothing loaded from the network, math through the local MathJax, no nan in a
table, the in-page table of contents.
"""
import importlib
import importlib.util
import json
import os
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


# -- the docstrings' Examples run, and the built method pages show the options and integrate ---------
def _public_objects():
    """(qualified name, object) of every public name of the API packages and of the members a page
    shows (their own methods and properties; an integrator's inherited integrate, integrate_batch)."""
    import inspect
    from pyint import Integrator
    seen, out = set(), []

    def add(name, obj):
        if id(obj) not in seen:
            seen.add(id(obj))
            out.append((name, obj))

    for package in _present():
        mod = importlib.import_module(package)
        for n in getattr(mod, "__all__", ()):
            obj = getattr(mod, n)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            add(f"{package}.{n}", obj)
            if inspect.isclass(obj):
                for m, member in vars(obj).items():
                    if not m.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                        add(f"{package}.{n}.{m}", member.fget if isinstance(member, property) else member)
    for m in ("integrate", "integrate_batch", "accepts", "params"):
        add(f"pyint.Integrator.{m}", getattr(Integrator, m))
    return out


def test_docstring_examples_run():
    """Every ``>>>`` example of the public API runs and prints what it shows (doctest)."""
    import doctest
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    ran = 0
    for name, obj in _public_objects():
        for test in finder.find(obj, name, globs={}):
            if test.examples:
                runner.run(test)
                ran += 1
    assert ran >= 20, f"only {ran} docstrings have examples"
    assert runner.failures == 0, f"{runner.failures} docstring examples failed (the report above)"


def test_docstring_fragments_fill_their_word_and_refuse_none():
    from pyint._docfrag import FRAGMENTS, fragment, with_fragments
    fragment("_test_start", """
    >>> from pyint import ${arg}
    >>> x = 1
    """)
    try:
        def f():
            """Examples
            --------
            %(_test_start: Rattle, LobattoIIIAB)s
            """
        assert with_fragments(f).__doc__.splitlines()[2:4] == ["            >>> from pyint import Rattle, LobattoIIIAB",
                                                                "            >>> x = 1"]

        def g():
            """%(_test_start)s"""
        with pytest.raises(KeyError):       # the fragment wants its word
            with_fragments(g)
        # every docstring that names a fragment was filled in: no %(...)s is left in the public API
        left = [name for name, obj in _public_objects() if re.search(r"%\(\w+(: [^)]*)?\)s", obj.__doc__ or "")]
        assert not left, left
    finally:
        del FRAGMENTS["_test_start"]


def test_site_method_pages_show_every_option_and_integrate():
    """The built site (./dev.sh docs): each integrator's page lists each of its constructor parameters
    (numpydoc's Parameters), documents integrate and integrate_batch, names no private base, and leaves
    the developer hooks (KERNEL, kernel_options, ...) to the developer page."""
    import inspect
    import pyint
    api = _api_module()
    if SITE is None:
        pytest.skip("PYINT_DOCS_HTML is not set (./dev.sh docs sets it after building the site)")
    HTML = SITE
    methods = [n for n in pyint.__all__ if api.is_method_class(getattr(pyint, n))]
    assert len(methods) >= 15
    for n in methods:
        cls = getattr(pyint, n)
        page = (HTML / "api" / "generated" / f"pyint.{n}.html").read_text(encoding="utf-8")
        params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
        listed = {name.strip() for group in re.findall(r"<strong>([^<]+)</strong>", page)
                  for name in group.split(",")}
        missing = [p for p in params if p not in listed]
        assert not missing, f"{n}: constructor parameters not described on its page: {missing}"
        assert str(inspect.signature(cls)) == str(inspect.signature(cls.__init__)).replace("(self, ", "(") \
            .replace("(self)", "()"), f"{n}: its signature is not its constructor's"
        sig = re.search(rf'<dt[^>]*id="pyint\.{n}">(.*?)</dt>', page, re.S).group(1)
        shown = re.findall(r'<span class="n"><span class="pre">(\w+)</span>', sig)
        assert shown == params, f"{n}: the page's signature shows {shown}, the constructor has {params}"
        for member in ("integrate", "integrate_batch"):
            assert f'id="pyint.{n}.{member}"' in page, f"{n}: {member} is not on its page"
        assert not re.search(r"\b_[A-Z]\w*", re.sub(r"<[^>]+>", " ", page).split("Bases:")[-1][:200]), \
            f"{n}: a private base class is listed"
        hooks = [h for h in api.DEVELOPER_NAMES if f'id="pyint.{n}.{h}"' in page]
        assert not hooks, f"{n}: developer hooks on the user page: {hooks}"
    dev = (HTML / "api" / "developer.html").read_text(encoding="utf-8")
    for cls, names in api.DEVELOPER_MEMBERS.items():
        for h in names:
            assert f'id="{cls}.{h}"' in dev, f"{cls}.{h} is not on the developer page"


# --- the built site ---------------------------------------------------------------------
# The site is read offline: nothing may come from the network, the math is rendered by the
# local MathJax (docs/conf.py: mathjax_path under _static/), and every page
# shows the in-page table of contents.  These tests read the site named by PYINT_DOCS_HTML;
# ./dev.sh docs (and so ./dev.sh test) runs them right after building it.  Without the variable
# they skip: a build left from an older checkout would be checked, not this one's.

SITE = Path(os.environ["PYINT_DOCS_HTML"]) if os.environ.get("PYINT_DOCS_HTML") else None
DOCS = ROOT / "docs"
#: pages Sphinx writes itself (index, search): not pages of the site's text
SPECIAL = {"genindex", "search", "py-modindex"}
#: tag -> attribute through which a page loads a resource (a plain link <a href> loads nothing)
LOADS = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src",
         "video": "src", "audio": "src", "embed": "src", "object": "data", "track": "src"}
REMOTE = re.compile(r"^\s*(https?:)?//", re.I)


@pytest.fixture(scope="module")
def site():
    """{docname: BeautifulSoup} of every page of the last build (its docnames from the search
    index, so a stale page of a removed source is not read)."""
    if SITE is None:
        pytest.skip("PYINT_DOCS_HTML is not set: ./dev.sh docs runs these tests on the site it built "
                    "(or: PYINT_DOCS_HTML=docs/_build/html)")
    import bs4     # pinned in requirements.lock (pydata-sphinx-theme needs it)

    index = SITE / "searchindex.js"
    assert index.exists(), f"no built site at {SITE} (PYINT_DOCS_HTML)"
    text = index.read_text(encoding="utf-8")
    docnames = json.loads(text[text.index("(") + 1:text.rindex(")")])["docnames"]
    return _Site((d, bs4.BeautifulSoup((SITE / f"{d}.html").read_text(encoding="utf-8"), "html.parser"))
                 for d in docnames if d not in SPECIAL)


class _Site(dict):
    """docname -> parsed page; printed short in a failure report."""

    def __repr__(self):
        return f"<site {SITE}: {len(self)} pages>"


def _source_has_math(docname):
    """Whether the page's source writes math: $...$, $$...$$, {math} or amsmath in Markdown,
    :math: or .. math:: in reST (code blocks and code spans left out)."""
    for suffix in (".md", ".rst"):
        path = DOCS / f"{docname}{suffix}"
        if path.exists():
            text = path.read_text(encoding="utf-8")
            break
    else:
        return False
    if suffix == ".rst":
        text = re.sub(r"``.*?``", "", text, flags=re.S)
        return bool(re.search(r":math:`|^\s*\.\. math::", text, re.M))
    text = re.sub(r"^(```|~~~).*?^\1\s*$", "", text, flags=re.S | re.M)     # fenced code blocks
    text = re.sub(r"`[^`\n]*`", "", text)                                    # code spans
    return bool(re.search(r"\$\$|(?<![\\$\w])\$(?=\S)[^$\n]+?(?<=\S)\$(?![\w$])|\{math\}|\\begin\{", text))


def _local_target(docname, url):
    """The file of the site a relative URL of page `docname` points to (query and fragment cut)."""
    path = url.split("#", 1)[0].split("?", 1)[0]
    return (SITE / docname).parent / path


def test_site_loads_nothing_from_the_network(site):
    """No script, stylesheet, image or frame of any page comes from another host (plain links
    to other sites, <a href>, load nothing and are allowed), and no stylesheet of the site
    imports one."""
    remote = [f"{d}: <{tag} {attr}={el.get(attr)}>" for d, soup in site.items()
              for tag, attr in LOADS.items() for el in soup.find_all(tag)
              if REMOTE.match(el.get(attr) or "") or any(REMOTE.match(u.split()[0])
                                                         for u in (el.get("srcset") or "").split(",") if u.strip())]
    assert not remote, "pages load from the network:\n" + "\n".join(remote[:20])
    css = [p for p in (SITE / "_static").rglob("*.css")
           if re.search(r"@import\s+(url\()?\s*['\"]?(https?:)?//|url\(\s*['\"]?(https?:)?//",
                        p.read_text(encoding="utf-8", errors="replace"))]
    assert not css, f"stylesheets that load from the network: {[str(p.relative_to(SITE)) for p in css]}"


def test_site_math_is_rendered_by_the_local_mathjax(site):
    """A page whose source writes math has math markup and loads MathJax from the site itself
    (_static/mathjax/, the file present); so does every page with math markup (docstrings)."""
    math_pages = {d for d in site if _source_has_math(d)}
    assert {"getting_started", "guide/methods", "guide/adaptive", "seeds/seed000"} <= math_pages, \
        "the math detection of the sources finds nothing (the test would pass vacuously)"
    wrong = []
    for d, soup in site.items():
        marked = soup.select("span.math, div.math")
        if d in math_pages and not marked:
            wrong.append(f"{d}: its source has math, the page no math markup")
        if not (marked or d in math_pages):
            continue
        scripts = [s.get("src", "") for s in soup.find_all("script") if "mathjax" in s.get("src", "").lower()]
        local = [s for s in scripts if not REMOTE.match(s) and "_static/mathjax/" in s
                 and _local_target(d, s).is_file()]
        if not local:
            wrong.append(f"{d}: math without the local MathJax (MathJax scripts: {scripts})")
    assert not wrong, "\n".join(wrong[:20])


def test_site_tables_show_no_nan(site):
    """No table cell shows a missing number: the token `nan` (how Python and NumPy print one),
    or a cell that is NaN alone.  Prose naming NaN ("NaN or Inf appeared") and code are allowed."""
    bad = []
    for d, soup in site.items():
        for td in soup.find_all("td"):
            for code in td.find_all(["code", "pre"]):
                code.decompose()
            text = " ".join(td.get_text(" ").split())
            if re.search(r"(?<![\w.])[-+]?nan(?![\w])", text) or text.lower() in ("nan", "-nan"):
                bad.append(f"{d}: <td>{text[:80]}</td>")
    assert not bad, "table cells with nan:\n" + "\n".join(bad[:20])


def test_site_every_page_has_the_page_toc(site):
    """Every page shows the in-page table of contents (pydata-sphinx-theme's secondary sidebar,
    docs/conf.py), with at least one entry, and it links each section below the page's title.
    A page of prose has sections (the index pages, the API package pages and the gallery's
    scripts were given theirs); an API object's page lists its members (Sphinx's object
    entries).  No page is exempt (Sphinx's own genindex and search are not pages of the text)."""
    assert len(site) > 20, f"only {len(site)} pages in the built site"
    missing = []
    for d, soup in site.items():
        article = soup.find("article", class_="bd-article")
        assert article is not None, f"{d}: no article (not a pydata-sphinx-theme page?)"
        sections = [h.parent.get("id") for h in article.find_all("h2") if h.parent.name == "section"]
        nav = soup.find("nav", id="pst-page-toc-nav")
        links = {a.get("href") for a in nav.find_all("a")} if nav else set()
        absent = [s for s in sections if f"#{s}" not in links]
        if nav is None or not links or absent:
            missing.append(f"{d}: {'no page TOC' if nav is None else 'an empty page TOC' if not links else f'sections not in the TOC: {absent}'}")
    assert not missing, f"{len(missing)} pages:\n" + "\n".join(missing[:30])


def _seed_studies():
    spec = importlib.util.spec_from_file_location("seed_data", ROOT / "tools" / "seed_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.STORED_STUDIES


@pytest.mark.parametrize("name", _seed_studies())
def test_seed_pages_show_default_size_runs_without_nan(name):
    """The seed pages and the IFToMM page draw from docs/seed_data/<study>.nc (tools/seed_data.py): a
    default-size run, not --quick, whose printed tables hold a number or a dash in every cell, never
    nan."""
    from pyint.cli import get_study
    from pyint.study.datasets import load_netcdf
    path = ROOT / "docs" / "seed_data" / f"{name}.nc"
    assert path.is_file(), f"run tools/seed_data.py {name}"
    # the repository stays lean: 3 MB a file (the largest, direction_vector_block, 1.8 MB;
    # iftomm_benchmarks 1.4 MB: 110 runs whose first 2001 samples are kept whole, tools/seed_data.py
    # HEAD, with its time coordinate compressed too)
    assert path.stat().st_size < 3e6
    ds = load_netcdf(path)
    assert ds.attrs["study"] == name and int(ds.attrs["quick"]) == 0
    study = get_study(name)
    text = study.summary(ds) if study.summary is not None else ""
    assert not re.search(r"\bnan\b", text, re.IGNORECASE), text


def test_iftomm_page_tables_come_from_the_stored_run(tmp_path):
    """docs/iftomm.md shows the study's results only through the tables docs/_ext/iftomm_tables.py
    writes from docs/seed_data/iftomm_benchmarks.nc at the build (a hand-copied table once
    disagreed with the stored run): the page includes each of them, and each has a row per run it
    covers and no nan."""
    from pyint.study.datasets import load_netcdf
    spec = importlib.util.spec_from_file_location("iftomm_tables", ROOT / "docs" / "_ext" / "iftomm_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ds = load_netcdf(ROOT / "docs" / "seed_data" / "iftomm_benchmarks.nc")
    page = (ROOT / "docs" / "iftomm.md").read_text(encoding="utf-8")
    for path in mod.write_tables(ds, tmp_path):
        name = Path(path).name
        assert f"_generated/studies/iftomm_tables/{name}" in page, name
        text = Path(path).read_text(encoding="utf-8")
        assert not re.search(r"\bnan\b", text, re.IGNORECASE), text
        cells = [c.strip() for row in text.splitlines()[2:] if row.startswith("| `") for c in row.strip("|").split("|")[1:]]
        ran = int(re.search(r"^(\d+) runs, ", text, re.MULTILINE).group(1))
        assert ran > 0 and sum(c != "–" for c in cells) == ran, (name, cells, ran)
    # the study's result tables are all generated: the page's own tables are the benchmarks'
    # specification and the Exudyn comparison (bench/, not the study)
    assert page.count("\n| --- |") == 2, "a hand-written results table on docs/iftomm.md"
