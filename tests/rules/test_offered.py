"""The What if tab's candidate profiles (issue #44): offered by key, read only from the
rules folder's regular files, never by a path the browser names."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from trajectory_review.rules.offered import (
    MAX_PROFILE_BYTES,
    Offered,
    offered_profiles,
    read_offered,
)
from trajectory_review.rules.registry import RulesError

RULES = "[says-something]\nmin_words = 3\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "strict.toml").write_text(RULES)
    (rules / "notes.txt").write_text("not a profile")
    outside = tmp_path / "secret.toml"
    outside.write_text("[says-something]\nmin_words = 99\n")
    (rules / "escape.toml").symlink_to(outside)
    (rules / "sub.toml").mkdir()
    os.mkfifo(rules / "pipe.toml")
    return rules


def test_only_regular_toml_files_of_the_folder_are_offered(folder):
    offered = offered_profiles(folder)
    assert set(offered) == {"shipped:default", "shipped:copilotkit", "folder:strict.toml"}
    assert offered["folder:strict.toml"].label == "strict.toml"


def test_an_offered_profile_is_read_by_its_key(folder):
    assert read_offered(offered_profiles(folder)["folder:strict.toml"]) == RULES


def test_a_file_swapped_for_a_pipe_after_listing_is_refused_without_waiting(folder):
    item = offered_profiles(folder)["folder:strict.toml"]
    (folder / "strict.toml").unlink()
    os.mkfifo(folder / "strict.toml")  # no writer will ever open it
    out: list = []

    def read() -> None:
        try:
            read_offered(item)
        except RulesError as exc:
            out.append(str(exc))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(30)  # blocked on the FIFO before: until a writer came
    assert out == ["strict.toml: not a regular file"]


def test_a_file_swapped_for_a_symlink_after_listing_is_not_followed(folder, tmp_path):
    item = offered_profiles(folder)["folder:strict.toml"]
    (folder / "strict.toml").unlink()
    (folder / "strict.toml").symlink_to(tmp_path / "secret.toml")
    with pytest.raises(RulesError) as exc:
        read_offered(item)
    assert str(exc.value) == "strict.toml: cannot be read"


@pytest.mark.parametrize("path", ["/nonexistent/x.toml", "/dev/zero", "/etc"])
def test_an_error_names_the_profile_as_listed_and_nothing_of_the_path(path):
    with pytest.raises(RulesError) as exc:
        read_offered(Offered("folder:x.toml", "x.toml", Path(path)))
    said = str(exc.value)
    assert said.startswith("x.toml: ") and path not in said and "No such" not in said


def test_a_profile_over_the_size_cap_is_refused(folder):
    (folder / "big.toml").write_text("#" * (MAX_PROFILE_BYTES + 1))
    with pytest.raises(RulesError, match="over 200,000 bytes"):
        read_offered(offered_profiles(folder)["folder:big.toml"])
