"""``python -m rackcron.cli``: the same as the ``rackcron`` command."""

from rackcron.cli import main

main()
