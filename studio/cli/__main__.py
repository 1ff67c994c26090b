"""``python -m vibestudio.studio.cli``: the ``vibestudio`` command without the installed console script."""

from vibestudio.studio.cli import main

main()
