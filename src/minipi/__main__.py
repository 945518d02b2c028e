"""``python -m minipi``: the CLI, as the ``minipi`` command runs it."""

from minipi.cli.main import main

try:
    main()
finally:
    # Under ``-m``, CPython 3.11 ends the process with SIGINT after minipi's own exit code
    # (130, "cancelled") when a KeyboardInterrupt once left an ``exec`` of a string (a
    # dataclass being made as Ctrl-C landed), though minipi caught it. The next such ``exec``
    # clears that flag; an interrupt that does leave main() sets it again.
    exec("pass")
