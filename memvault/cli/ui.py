"""``memvault ui [--no-browser]``: see and steer the memory in a local web page.

The page is served by the data dir's owner process (started here when none runs, as a
stdio client starts it), on 127.0.0.1 at an ephemeral port, behind a secret made for
that owner's life. This command asks the owner for the address, prints it on stdout and
opens it in the default browser (``--no-browser``: only prints it). The page stays up
while it is used, and goes with the owner, its idle time after the last request and the
last MCP client.
"""

from __future__ import annotations

import argparse
import os
import sys

from memvault.cli.common import log_to_stderr, settings_of


def add_parser(sub) -> None:
    """Add the ``ui`` sub-command to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("ui", help="open a local web page to see, search and fix what is remembered")
    sp.add_argument("--data-dir", help="data folder (env MEMVAULT_DATA_DIR)")
    sp.add_argument("--no-browser", action="store_true", help="print the page's address without opening a browser")
    sp.set_defaults(func=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    """Print the page's URL (and open it); 0, or 1 with one line on stderr when no owner could serve it."""
    os.umask(0o077)  # the owner this may start creates the data dir and its files
    import anyio

    from memvault.process.forwarder import OwnerUnavailable
    from memvault.process.handshake import HandshakeError
    from memvault.process.ui_host import page_url

    log_to_stderr("WARNING")
    settings = settings_of(args)
    try:
        url = anyio.run(page_url, settings)
    except (OwnerUnavailable, HandshakeError, OSError) as exc:
        sys.stderr.write(f"memvault ui: {exc}\n")
        return 1
    sys.stdout.write(url + "\n")
    sys.stdout.flush()
    if not args.no_browser:
        import webbrowser

        if not webbrowser.open(url):
            sys.stderr.write("memvault ui: no browser could be opened; open the address above yourself\n")
    return 0
