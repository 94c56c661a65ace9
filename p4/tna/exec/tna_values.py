# SPDX-License-Identifier: Apache-2.0
"""tna_values.py - the values tna_exec.py computes with: headers (fields
and validity), structs that remember their written fields, a bit stream
for parsing and deparsing, and the executor's error."""


class ExecError(Exception):
    """What the executor cannot run: a construct of the IR it does not
    implement, or a packet the program cannot take (shorter than its
    parser extracts, a register index past its size)."""


class Header:
    def __init__(self, fields):
        self.valid = False
        self.f = dict(fields)

    def __deepcopy__(self, memo):
        h = Header(self.f)
        h.valid = self.valid
        return h


class Written(dict):
    """A struct whose written fields are remembered (ucast_egress_port;
    a metadata struct's fields read before any write)."""

    def __init__(self, *a):
        super().__init__(*a)
        self.written = set()
        self.strict = None  # the struct's name where reads before writes are recorded

    def __setitem__(self, k, v):
        self.written.add(k)
        super().__setitem__(k, v)


class Bits:
    """A bit stream: extract from the front, emit at the back."""

    def __init__(self, value=0, width=0):
        self.v, self.w = value, width

    def take(self, n):
        if n > self.w:
            raise ExecError('packet too short')
        self.w -= n
        out = self.v >> self.w
        self.v &= (1 << self.w) - 1
        return out

    def put(self, value, n):
        self.v = (self.v << n) | (value & ((1 << n) - 1))
        self.w += n

    @staticmethod
    def of_bytes(b):
        return Bits(int.from_bytes(b, 'big'), 8 * len(b))

    def to_bytes(self):
        if self.w % 8:
            raise ExecError('emitted %d bits, not whole bytes' % self.w)
        return self.v.to_bytes(self.w // 8, 'big')


def mask(w):
    return (1 << w) - 1


def sig(v, w):
    return v - (1 << w) if v >> (w - 1) & 1 else v
