"""``python -m memvault`` runs the same CLI as the ``memvault`` console script."""

from memvault.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
