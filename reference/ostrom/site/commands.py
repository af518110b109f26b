"""``ostrom site``: build the documentation site (``make site``)."""

from __future__ import annotations

from pathlib import Path

import click

from ostrom import layout
from ostrom.cli.exits import BadInput, ToolError
from ostrom.site.build import SiteError, build_site

__all__ = ["site"]


@click.command(name="site")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to write the site (default: build/site of this source tree).",
)
def site(out: Path | None) -> None:
    """Build docs/ into a static site with MkDocs, search and explorer pages included.

    An explorer page per committed counterexample; every link of every page must resolve.

    Open build/site/index.html, or serve it: python -m http.server -d build/site
    (search needs a server: browsers do not let file:// pages fetch its index).
    """
    try:
        root = layout.source_tree("ostrom site")  # the site is built from docs/
    except layout.NotACheckout as exc:
        raise BadInput(str(exc)) from None
    target = out or root / "build" / "site"
    try:
        build_site(root, target)
    except SiteError as exc:
        raise ToolError(str(exc)) from None
    click.echo(f"wrote the site to {target} (open {target / 'index.html'})", err=True)
