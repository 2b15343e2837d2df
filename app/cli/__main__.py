"""``python -m app.cli``: the same as the ``cometa`` command."""

from app.cli import main

main()
