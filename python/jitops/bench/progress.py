"""A progress bar on a terminal (tqdm where installed, else a plain counter
on stderr); nothing but the lines themselves when output is redirected."""

import sys


class Progress:
    def __init__(self, total, label):
        self.total, self.label, self.done = total, label, 0
        self.bar = None
        self.tty = sys.stderr.isatty()
        if self.tty:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=label, file=sys.stderr, leave=False)
            except ImportError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        elif self.tty:
            sys.stderr.write("\r\033[K")
        return False

    def write(self, line):
        """Prints a line of the table above the bar."""
        if self.bar is not None:
            self.bar.write(line, file=sys.stdout)
        else:
            if self.tty:
                sys.stderr.write("\r\033[K")
            print(line, flush=True)

    def update(self, n=1):
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.tty:
            sys.stderr.write(f"\r{self.label}: {self.done}/{self.total}")
            sys.stderr.flush()
