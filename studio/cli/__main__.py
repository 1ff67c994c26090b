"""``python -m studio.cli``: the ``vibestudio`` command without the installed console script."""

from studio.cli import main

main()
