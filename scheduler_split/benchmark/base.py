"""What stops a run, and the progress a run shows while it works."""

import sys
import time


class BenchError(Exception):
    """What stops a run, said so that the user knows what to change."""


class Progress:
    """One line of progress on standard error.

    On a terminal the line is redrawn in place (at most ten times a
    second); anywhere else (a log, a CI job) a line is printed every few
    seconds, so that the output stays readable.
    """

    def __init__(self, stream=None, interval=5.0):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval if not self.tty else 0.1
        self._last = 0.0
        self._width = 0

    def show(self, text):
        now = time.monotonic()
        if now - self._last < self.interval:
            return
        self._last = now
        if self.tty:
            self.stream.write('\r' + text.ljust(self._width))
            self._width = len(text)
        else:
            self.stream.write(text + '\n')
        self.stream.flush()

    def done(self, text):
        """The last state of a step, on a line of its own."""
        if self.tty:
            self.stream.write('\r' + text.ljust(self._width) + '\n')
            self._width = 0
        else:
            self.stream.write(text + '\n')
        self.stream.flush()
        self._last = 0.0
