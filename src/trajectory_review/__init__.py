"""trajectory-review: play back recorded data-assistant conversations faithfully."""

from pathlib import Path

from trajectory_review import native

__version__ = "0.2.0"

# Before any other module of the package is imported: the replay compiled, when `make`
# built it from these very sources (trajectory_review.native).
native.install(Path(__file__).parent)
