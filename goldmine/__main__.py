"""Allows ``python -m goldmine``."""

from goldmine.cli import main

if __name__ == "__main__":
    main()
