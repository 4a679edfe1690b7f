"""Byte-level corruption of text trace files, shared by the loaders' fuzz tests."""

from __future__ import annotations

from hypothesis import strategies as st

KINDS = ("flip", "truncate", "garbage_line", "drop_field", "extra_field", "non_utf8",
         "dup_line", "blank_line", "text_field", "nan_field")


def ops(kinds=KINDS):
    """1-3 corruptions: (kind, position, junk bytes)."""
    return st.lists(st.tuples(st.sampled_from(kinds), st.integers(0, 10**6),
                              st.binary(min_size=1, max_size=6)), min_size=1, max_size=3)


def corrupt(data: bytes, ops: list[tuple[str, int, bytes]], sep: bytes | None = b",") -> bytes:
    """Apply (kind, position, junk) corruptions to a text file's bytes; ``sep`` splits
    fields (None: whitespace, as in SWF)."""
    joiner = sep or b" "
    for kind, pos, junk in ops:
        lines = data.split(b"\n")
        li = pos % len(lines)
        at = pos % (len(data) + 1)
        fields = lines[li].split(sep)
        if kind == "flip" and data:
            at %= len(data)
            data = data[:at] + bytes([data[at] ^ (junk[0] or 0x20)]) + data[at + 1:]
        elif kind == "truncate":
            data = data[:at]
        elif kind == "non_utf8":
            data = data[:at] + b"\xff\xc3" + data[at:]
        else:
            if kind == "garbage_line":
                lines.insert(li, junk)
            elif kind == "dup_line":
                lines.insert(li, lines[li])
            elif kind == "blank_line":
                lines.insert(li, b"")
            elif kind == "extra_field":
                lines[li] += joiner + b"7"
            elif fields and kind == "drop_field":
                del fields[pos % len(fields)]
                lines[li] = joiner.join(fields)
            elif fields and kind in ("text_field", "nan_field"):
                bad = junk if kind == "text_field" or junk[:1].isalpha() else b"nan"
                fields[pos % len(fields)] = bad
                lines[li] = joiner.join(fields)
            data = b"\n".join(lines)
    return data
