"""trajectory-review: play back recorded data-assistant conversations faithfully."""

__version__ = "0.2.0"
