"""`python -m ember.compat script.py [args]` / `python -m ember.compat -m module [args]`: runs a
PyTorch script on Ember, with `sys.argv` and `sys.path[0]` as `python script.py` would set them."""
import os
import runpy
import sys

import ember.compat

USAGE = "usage: python -m ember.compat (script.py | -m module) [args ...]"


def main(argv):
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if not argv or argv == ["-m"]:
        print(USAGE, file=sys.stderr)
        return 2
    ember.compat.install()
    if argv[0] == "-m":
        # run_module sets sys.argv[0] to the module's file, as `python -m module` does.
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        script = argv[0]
        sys.argv = list(argv)
        # `python script.py` puts the script's folder first on the path (for its sibling imports),
        # where `python -m` put the working directory.
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
