"""Entry point for `shiny run` and Posit Connect: the app is built by the package.

On Connect the bundle is this folder and only requirements.txt is installed, so the
package is imported from src/ directly.
"""

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "src"))

# the index is built while the app below is imported (trajectory_review/app/startup.py)
from trajectory_review.app import startup  # noqa: E402

startup.start()

from trajectory_review.app.server import make_app  # noqa: E402

app = make_app()
