"""Entry point for `shiny run` and Posit Connect: the app is built by the package.

On Connect the bundle is this folder and only requirements.txt is installed, so the
package is imported from src/ directly.
"""

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "src"))

# the index is built while the app below is imported (trajectory_review/index/early.py)
from trajectory_review.index import early  # noqa: E402

early.start()

from trajectory_review.app.server import make_app  # noqa: E402

app = make_app()
