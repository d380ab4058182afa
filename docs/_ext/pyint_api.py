"""The API reference is generated from each public package's ``__all__``.

`write_api_pages` writes ``docs/api/<package>.rst``: one autosummary table (with a
generated page per name) of exactly the names in ``package.__all__``.  Nothing is
listed by hand, so a name added to ``__all__`` gets its page at the next build and a
name removed loses it; ``tests/test_docs.py`` checks that the generated pages are
``__all__``, name for name.
"""
import importlib
import os

# the public packages, in the order the reference shows them
PACKAGES = ("pyint", "pyint.models", "pyint.reference", "pyint.study", "pyint.plotting")


def public_names(package):
    """Return ``package.__all__`` as a list (a package without ``__all__`` is an error)."""
    mod = importlib.import_module(package)
    names = getattr(mod, "__all__", None)
    if names is None:
        raise RuntimeError(f"{package} has no __all__: the API reference is generated from it")
    names = list(names)
    missing = [n for n in names if not hasattr(mod, n)]
    if missing:
        raise RuntimeError(f"{package}.__all__ names what {package} does not define: {missing}")
    return names


def available_packages():
    """The packages of `PACKAGES` that this installation has and that define ``__all__``."""
    out = []
    for package in PACKAGES:
        try:
            mod = importlib.import_module(package)
        except ModuleNotFoundError:
            continue
        if hasattr(mod, "__all__"):
            out.append(package)
    return out


def documented_in(package, name, packages):
    """The subpackage of ``package`` among ``packages`` whose ``__all__`` exports the same object
    as ``package.name`` (its page documents it: pyint re-exports the classes of pyint.models), or None."""
    obj = getattr(importlib.import_module(package), name)
    for other in packages:
        if other.startswith(package + "."):
            mod = importlib.import_module(other)
            if name in getattr(mod, "__all__", ()) and getattr(mod, name) is obj:
                return other
    return None


def page_text(package, packages=None):
    """The reST source of one package's API page: a generated page per name of ``__all__``,
    except the names re-exported from another package of ``packages`` (a link to that page)."""
    packages = available_packages() if packages is None else packages
    names = sorted(public_names(package), key=str.lower)
    elsewhere = {n: documented_in(package, n, packages) for n in names}
    title = f"``{package}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {package}", "   :no-members:", "",
             f".. currentmodule:: {package}", "", ".. autosummary::", "   :toctree: generated",
             "   :nosignatures:", ""]
    lines += [f"   {n}" for n in names if elsewhere[n] is None]
    again = [n for n in names if elsewhere[n] is not None]
    if again:
        lines += ["", f"Also importable from ``{package}`` (documented with their package):", ""]
        lines += [f"- :py:obj:`{package}.{n} <{elsewhere[n]}.{n}>`" for n in again]
    return "\n".join(lines) + "\n"


def write_api_pages(srcdir):
    """Write ``api/<package>.rst`` for every available package; return the package names.

    Files are rewritten only when their text changes (Sphinx then rebuilds only those).
    """
    api = os.path.join(srcdir, "api")
    os.makedirs(api, exist_ok=True)
    packages = available_packages()
    for old in os.listdir(api):        # the page of a package no longer listed goes
        if old.endswith(".rst") and old != "index.rst" and old[:-4] not in packages:
            os.remove(os.path.join(api, old))
    for package in packages:
        path = os.path.join(api, f"{package}.rst")
        text = page_text(package, packages)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    toc = ["API reference", "=============", "",
           "Every public name of pyint, one page each, generated from each package's ``__all__``.", "",
           ".. toctree::", "   :maxdepth: 1", ""] + [f"   {p}" for p in packages]
    path = os.path.join(api, "index.rst")
    text = "\n".join(toc) + "\n"
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return packages
