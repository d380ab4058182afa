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


HTML = ROOT / "docs" / "_build" / "html"


def test_method_pages_show_every_option_and_integrate():
    """The built site (./dev.sh docs): each integrator's page lists each of its constructor parameters
    (numpydoc's Parameters), documents integrate and integrate_batch, names no private base, and leaves
    the developer hooks (KERNEL, kernel_options, ...) to the developer page."""
    import inspect
    import pyint
    api = _api_module()
    if not (HTML / "api" / "generated").is_dir():
        pytest.skip("the site is not built (./dev.sh docs)")
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
