"""``python -m textveil.cli``: the same command line as the ``textveil`` script."""

from textveil.cli.entry import main

if __name__ == "__main__":  # pragma: no cover
    main()
