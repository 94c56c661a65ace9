# SPDX-License-Identifier: Apache-2.0
"""tna_bfrt.py - bfrt_python's objects, as far as serene-ctl's scripts use
them, over an executed program (tna_exec.Switch): a script serene-ctl
writes for Tofino runs (exec) against the program's tables, registers,
counters and replication nodes as it would on bf_switchd.

    run_script(sw, text)   # raises SystemExit where the script stops

What it takes: TABLE.add_with_ACTION(keys..., params..., MATCH_PRIORITY=),
TABLE.get(regex=True, return_ents=True, ...) (the entries' keys),
TABLE.delete(keys...), REGISTER.mod(REGISTER_INDEX=, field=...),
COUNTER.mod(COUNTER_INDEX=, $COUNTER_SPEC_PKTS=), COUNTER.get(...),
bfrt.pre.node.add / bfrt.pre.mgid.add, bfrt.complete_operations(). Anything
else is an error, so a script that needs more fails here.
"""
import ipaddress

import tna_exec


def _value(v):
    if isinstance(v, str):
        return int(ipaddress.IPv4Address(v))
    return int(v)


class Entry:
    def __init__(self, key, data):
        self.key, self.data = key, data


class Table:
    def __init__(self, sw, cp, decl):
        self.sw, self.cp, self.decl = sw, cp, decl
        pr = tna_exec.props(decl)
        self.keys = [(k['cp_name'], k['matchType']['path']['name'])
                     for k in pr['key']['value']['keyElements']]

    def __getattr__(self, name):
        if name.startswith('add_with_'):
            return lambda **kw: self.add(name[len('add_with_'):], kw)
        raise tna_exec.ExecError('bfrt: %s.%s' % (self.cp, name))

    def add(self, action, kw):
        keys = {}
        for k, kind in self.keys:
            if k not in kw:
                raise tna_exec.ExecError('bfrt: %s: no key %s' % (self.cp, k))
            v = _value(kw.pop(k))
            if kind == 'ternary':
                keys[k] = (v, _value(kw.pop(k + '_mask')))
            else:
                keys[k] = v
        prio = kw.pop('MATCH_PRIORITY', 0)
        gress = self.cp.split('.')[0]
        self.sw.table_add(self.cp, keys, '%s.%s' % (gress, action),
                          {k: _value(v) for k, v in kw.items()}, prio=prio)

    def get(self, regex=False, return_ents=False, print_ents=True, **kw):
        ents = self.sw.entries.get(self.decl['name'], [])
        out = [Entry({k.encode(): v for k, v in keys.items()}, data)
               for _, keys, _, data in ents]
        return out if return_ents else None

    def delete(self, **kw):
        name = self.decl['name']
        want = {k: _value(v) for k, v in kw.items()}
        self.sw.entries[name] = [e for e in self.sw.entries.get(name, [])
                                 if any(e[1].get(k) != v for k, v in want.items())]


class Register:
    def __init__(self, sw, cp, decl):
        self.sw, self.cp, self.decl = sw, cp, decl

    def mod(self, REGISTER_INDEX, **fields):
        size = self.decl['arguments'][0]['expression']['value']
        if not 0 <= REGISTER_INDEX < size:
            raise tna_exec.ExecError('bfrt: %s index %d past %d' % (self.cp, REGISTER_INDEX, size))
        init = self.sw.reg_init(self.decl)
        if isinstance(init, dict):
            if set(fields) != set(init):
                raise tna_exec.ExecError('bfrt: %s takes %s' % (self.cp, sorted(init)))
            v = tna_exec.Written({k: int(x) for k, x in fields.items()})
        else:
            if set(fields) != {'f1'}:
                raise tna_exec.ExecError('bfrt: %s takes f1' % self.cp)
            v = int(fields['f1'])
        self.sw.register(self.cp)[REGISTER_INDEX] = v


class Counter:
    def __init__(self, sw, cp):
        self.sw, self.cp = sw, cp

    def mod(self, COUNTER_INDEX, **kw):
        self.sw.counters.setdefault(self.cp, {})[COUNTER_INDEX] = int(kw['$COUNTER_SPEC_PKTS'])

    def get(self, COUNTER_INDEX=None, from_hw=False, print_ents=True, return_ents=False, **kw):
        c = self.sw.counters.get(self.cp, {})
        return Entry({}, {b'$COUNTER_SPEC_PKTS': c.get(COUNTER_INDEX, 0)})


class Gress:
    def __init__(self, sw, gress):
        self.sw, self.gress = sw, gress

    def __getattr__(self, name):
        cp = '%s.%s' % (self.gress, name)
        d = self.sw.cp.get(cp)
        if d is None:
            raise tna_exec.ExecError('bfrt: no %s in the program' % cp)
        if d['Node_Type'] == 'P4Table':
            return Table(self.sw, cp, d)
        base = d['type'].get('base')
        if base == 'Register':
            return Register(self.sw, cp, d)
        if base == 'Counter':
            return Counter(self.sw, cp)
        raise tna_exec.ExecError('bfrt: %s is a %s' % (cp, base))


class Pipe:
    def __init__(self, sw):
        self.Ingress, self.Egress = Gress(sw, 'Ingress'), Gress(sw, 'Egress')


class Pre:
    def __init__(self, sw):
        self.sw, self.nodes = sw, {}
        self.node = self
        self.mgid = self

    def add(self, MGID=None, MULTICAST_NODE_ID=None, MULTICAST_RID=None, DEV_PORT=None, **kw):
        if MGID is None:  # a node
            self.nodes[MULTICAST_NODE_ID] = [(MULTICAST_RID, p) for p in DEV_PORT]
        else:
            self.sw.mcast_group(MGID, [rp for n in MULTICAST_NODE_ID for rp in self.nodes[n]])


class Bfrt:
    def __init__(self, sw):
        self.pre = Pre(sw)
        self.serene = type('Prog', (), {})()
        self.serene.pipe = Pipe(sw)

    def complete_operations(self):
        pass


def run_script(sw, text, bfrt=None):
    """Exec one of serene-ctl's Tofino scripts against sw."""
    exec(compile(text, '<serene-ctl script>', 'exec'), {'bfrt': bfrt or Bfrt(sw)})
