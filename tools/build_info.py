"""Write pyint/_build_info.py at build time: the git commit of the source tree.

Called by meson (see meson.build): ``python tools/build_info.py OUTPUT SOURCE_DIR``.
The commit is "<sha>" or "<sha>-dirty" (tracked files modified), "unknown"
when the source is not a git checkout.
"""
import subprocess
import sys


def commit(src):
    def git(*args):
        return subprocess.run(["git", "-C", src, *args], capture_output=True, text=True, timeout=30)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return "unknown"
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty else "")


if __name__ == "__main__":
    out, src = sys.argv[1], sys.argv[2]
    text = f'"""Written by tools/build_info.py when pyint was built."""\nGIT_COMMIT = "{commit(src)}"\n'
    with open(out, "w") as fh:
        fh.write(text)
