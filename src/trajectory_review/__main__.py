"""`python -m trajectory_review`: the command line."""

from trajectory_review.tools.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
