"""`python -m trajectory_review`: the command line."""

from trajectory_review.tools.cli import run

if __name__ == "__main__":
    run()
