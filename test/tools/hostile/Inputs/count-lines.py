"""Counts the lines of standard input: 'lines: N (under LIMIT)' when N is
below LIMIT, else 'lines: N (LIMIT or more)'."""
import sys

limit = int(sys.argv[1])
n = sum(1 for _ in sys.stdin)
print("lines: %d (%s)" % (n, "under %d" % limit if n < limit else "%d or more" % limit))
