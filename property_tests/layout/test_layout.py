"""Where ostrom's files are (ostrom/layout.py): a checkout is told from an installed
package, and a command that needs the source tree says so in one line where there is
none.  property_tests/project/test_packaging.py checks the same from a built wheel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ostrom import layout


def _tree(root: Path, folders: tuple[str, ...]) -> Path:
    package = root / "reference" / "ostrom"
    package.mkdir(parents=True)
    for folder in folders:
        (root / folder).mkdir()
    return package


def test_a_checkout_has_every_data_folder(tmp_path: Path) -> None:
    assert layout.checkout_of(_tree(tmp_path, layout.DATA_DIRS)) == tmp_path


@pytest.mark.parametrize("missing", layout.DATA_DIRS)
def test_a_tree_without_one_data_folder_is_no_checkout(tmp_path: Path, missing: str) -> None:
    folders = tuple(d for d in layout.DATA_DIRS if d != missing)
    assert layout.checkout_of(_tree(tmp_path, folders)) is None


def test_this_run_is_from_the_checkout() -> None:
    assert layout.CHECKOUT == layout.ROOT
    assert layout.SPEC_DIR == layout.ROOT / "spec" and (layout.SPEC_DIR / "PBFT.tla").is_file()
    assert layout.source_tree("a test") == layout.CHECKOUT


def test_scratch_goes_to_the_current_directory_for_the_packages_own_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert layout.in_package(layout.PACKAGE_DIR / "_data")
    assert layout.scratch(layout.PACKAGE_DIR / "_data") == tmp_path
    assert not layout.in_package(layout.ROOT)
    assert layout.scratch(layout.ROOT) == layout.ROOT
    assert not layout.in_package(tmp_path)


def test_an_installed_package_has_no_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "CHECKOUT", None)
    with pytest.raises(layout.NotACheckout) as caught:
        layout.source_tree("ostrom site")
    message = str(caught.value)
    assert message.startswith("ostrom site needs a source checkout") and "\n" not in message
    assert all(f"{d}/" in message for d in layout.DATA_DIRS)
