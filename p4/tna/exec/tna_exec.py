#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tna_exec.py - executes the Tofino program's IR (tna_ir.py's output).

The program as bf-p4c's front and mid end leave it: its parsers, controls,
tables (const entries in order, control-plane entries by priority),
actions and RegisterActions run statement by statement, with TNA's pipeline
around them: the ingress parser sees the intrinsic metadata and the port
metadata (or the resubmit header) before the frame; a resubmitted packet
runs ingress again; the deparsed headers and the unparsed rest go to the
egress of the unicast port or of each copy of the multicast group (the
replication engine's nodes are given by the caller); drop_ctl drops.

What it assumes of Tofino, beside the P4: Hash CRC32 is IEEE 802.3's CRC-32
over the fields' big-endian bytes, its low bits taken (as p4/tna/model
does); Checksum is the IPv4 header checksum; registers, counters and the
replication nodes are the caller's to set and read. It runs one packet at a
time: no two packets share a stage.

    prog = Program.load('serene_tna.ir.json')
    sw = Switch(prog)
    sw.table_add('Ingress.job_table', {'job': 1}, 'Ingress.set_job', {...})
    outs = sw.packet(port, frame)   # [(port, frame, rid)]
"""
import copy
import json
import struct
import zlib

from tna_values import Bits, ExecError, Header, Written, mask, sig  # noqa: F401 (re-exported)


class Return(Exception):
    pass


class Program:
    def __init__(self, ir):
        if ir.get('serene_tna_ir') != 1:
            raise ExecError('not an IR from tna_ir.py')
        self.decls = {o['name']: o for o in ir['objects'] if o.get('name')}
        pipe = self.decls['pipe']
        names = [a['expression']['constructedType']['path']['name'] for a in pipe['arguments']]
        (self.ig_parser, self.ingress, self.ig_deparser, self.eg_parser, self.egress,
         self.eg_deparser) = [self.decls[n] for n in names]

    @staticmethod
    def load(path):
        with open(path) as f:
            return Program(json.load(f))

    def resolve(self, t):
        while t.get('Node_Type') == 'Type_Name' or (t.get('Node_Type') == 'Type_Typedef'):
            if t['Node_Type'] == 'Type_Typedef' and 'type' in t:
                t = t['type']
                continue
            d = self.decls.get(t['name'])
            if d is None:
                return t
            t = d
        if t.get('Node_Type') in ('Type_Header', 'Type_Struct') and 'fields' not in t:
            t = self.decls.get(t['name'], t)
        return t

    def width(self, t):
        t = self.resolve(t)
        if t['Node_Type'] == 'Type_Bits':
            return t['size']
        if t['Node_Type'] == 'Type_Boolean':
            return 1
        if t['Node_Type'] in ('Type_Header', 'Type_Struct'):
            return sum(self.width(f['type']) for f in t['fields'])
        raise ExecError('no width for %s' % t)

    def new(self, t):
        """A value of type t: bits 0, headers invalid, stacks of headers."""
        t = self.resolve(t)
        nt = t['Node_Type']
        if nt == 'Type_Bits':
            return 0
        if nt == 'Type_Boolean':
            return False
        if nt == 'Type_Header':
            return Header({f['name']: self.new(f['type']) for f in t['fields']})
        if nt == 'Type_Struct':
            return Written({f['name']: self.new(f['type']) for f in t['fields']})
        if nt in ('Type_Array', 'Type_Stack'):
            return [self.new(t['elementType']) for _ in range(t['size']['value'])]
        return None


SWITCH_IP = 0x0a0000fe  # the switch's address in the frames udp_frame builds
WIRE_UDP_PORT = 48200   # SR_WIRE_UDP_PORT


def udp_frame(src_ip, src_port, payload):
    """A worker's datagram as the frame a switch port sees: Ethernet
    (addresses 0), IPv4 (DF, TTL 64, checksum 0) from src_ip to SWITCH_IP,
    UDP from src_port to WIRE_UDP_PORT (checksum 0), payload."""
    udp = struct.pack('>HHHH', src_port, WIRE_UDP_PORT, 8 + len(payload), 0)
    ip = struct.pack('>BBHHHBBHII', 0x45, 0, 28 + len(payload), 0, 0x4000, 64, 17, 0, src_ip,
                     SWITCH_IP)
    return bytes(12) + b'\x08\x00' + ip + udp + payload


def props(table):
    return {p['name']: p for p in table['properties']['properties']}


class Switch:
    def __init__(self, prog):
        self.p = prog
        self.regs = {}      # instance name -> {index: value}
        self.counters = {}  # control-plane name -> {index: packets}
        self.entries = {}   # instance name of a table -> [(prio, keys, action, data)]
        self.mcast = {}     # group -> [(rid, port)]
        self.cp = {}        # control-plane name -> the local (table, register, ...)
        self.scopes = {}    # parser or control name -> {local name: local}
        for ctl in (prog.ingress, prog.egress, prog.ig_parser, prog.eg_parser,
                    prog.ig_deparser, prog.eg_deparser):
            scope = self.scopes.setdefault(ctl['name'], {})
            for loc in ctl.get('controlLocals', ctl.get('parserLocals', [])):
                scope[loc['name']] = loc
                if loc.get('cp_name'):
                    self.cp[loc['cp_name']] = loc
        self.coverage = set()
        # (struct, field) of the user metadata read before anything wrote it
        # (P4 leaves such values unspecified; this executor gives 0).
        self.uninit_reads = set()

    # ---- control plane ----

    def table_add(self, table, keys, action, data=None, prio=0):
        """keys: {key name: value or (value, mask)}; data: {param: value}."""
        t = self.cp.get(table)
        if t is None or t['Node_Type'] != 'P4Table':
            raise ExecError('no table %s' % table)
        self.entries.setdefault(t['name'], []).append((prio, keys, action, data or {}))

    def mcast_group(self, grp, nodes):
        self.mcast[grp] = list(nodes)

    def register(self, name):
        """A register's {index: value} by control-plane name (values not in
        it are the initial value)."""
        d = self.cp[name]
        return self.regs.setdefault(d['name'], {})

    def reg_read(self, name, idx):
        d = self.cp[name]
        return copy.deepcopy(self.regs.get(d['name'], {}).get(idx, self.reg_init(d)))

    def reg_init(self, d):
        args = d['arguments']
        if len(args) > 1:
            return self.eval_const(args[1]['expression'])
        t = d['type']['arguments'][0]
        return self.p.new(t)

    def eval_const(self, e):
        if e['Node_Type'] == 'Constant':
            return e['value']
        if e['Node_Type'] == 'StructExpression':
            return Written({c['name']: self.eval_const(c['expression']) for c in e['components']})
        raise ExecError('register initial value %s' % e['Node_Type'])

    # ---- the pipeline ----

    def packet(self, port, frame, max_resubmits=1):
        """Runs one frame in at port; returns [(port, frame bytes, rid)]."""
        resub = None
        for _ in range(max_resubmits + 1):
            g = self.run_ingress(port, frame, resub)
            if g['resubmit'] is not None:
                resub = g['resubmit']
                continue
            break
        else:
            raise ExecError('resubmitted more than %d times' % max_resubmits)
        dp, tm = g['dprsr'], g['tm']
        if dp['drop_ctl'] & 1:
            return []
        copies = []
        if 'ucast_egress_port' in tm.written:
            copies.append((tm['ucast_egress_port'], 0))
        if tm['mcast_grp_a']:
            copies.extend((p, rid) for rid, p in self.mcast.get(tm['mcast_grp_a'], []))
        outs = []
        for p, rid in copies:
            o = self.run_egress(p, rid, g['out'])
            if o is not None:
                outs.append((p, o, rid))
        return outs

    def intrinsic(self, tname, values):
        """The bits of intrinsic metadata header tname: values, others 0."""
        bits = Bits()
        for f in self.p.resolve({'Node_Type': 'Type_Name', 'name': tname})['fields']:
            bits.put(values.get(f['name'], 0), self.p.width(f['type']))
        return bits

    def run_gress(self, parser, control, deparser, bits):
        """One gress: parser (pkt, hdr, md, intrinsic metadata) over bits,
        control (hdr, md, intrinsic metadata, then its other intrinsic
        structs, new), deparser (pkt, hdr, md, the control's fifth
        parameter: the for-deparser metadata). Returns the control's
        parameters by position and the deparsed headers; bits keeps the
        unparsed rest."""
        P = self.p
        penv = {name: P.new(t) for name, _, t in parser['params'][1:]}
        penv[parser['params'][2][0]].strict = parser['params'][2][2].get('name')
        self.run_parser(parser, bits, penv)
        names = [n for n, _, _ in control['params']]
        cenv = {names[i]: penv[parser['params'][i + 1][0]] for i in range(3)}
        for name, _, t in control['params'][3:]:
            cenv[name] = P.new(t)
        self.run_control(control, cenv)
        out = Bits()
        dn = [n for n, _, _ in deparser['params']]
        denv = {dn[1]: cenv[names[0]], dn[2]: cenv[names[1]], dn[3]: cenv[names[4]]}
        self.run_control(deparser, denv, pkt=(dn[0], out))
        return [cenv[n] for n in names], out

    def run_ingress(self, port, frame, resub):
        bits = self.intrinsic('ingress_intrinsic_metadata_t',
                              {'resubmit_flag': 1 if resub is not None else 0,
                               'ingress_port': port})
        bits.put(resub if resub is not None else 0, 64)
        f = Bits.of_bytes(frame)
        bits.put(f.v, f.w)
        P = self.p
        self.resubmitted = None
        params, out = self.run_gress(P.ig_parser, P.ingress, P.ig_deparser, bits)
        out.put(bits.v, bits.w)  # the unparsed rest
        dp = params[4]
        res = self.resubmitted if dp['resubmit_type'] != 0 else None
        return {'out': out, 'dprsr': dp, 'tm': params[5], 'resubmit': res}

    def run_egress(self, port, rid, pkt):
        P = self.p
        bits = self.intrinsic('egress_intrinsic_metadata_t',
                              {'egress_port': port, 'egress_rid': rid})
        bits.put(pkt.v, pkt.w)
        params, out = self.run_gress(P.eg_parser, P.egress, P.eg_deparser, bits)
        if params[4]['drop_ctl'] & 1:
            return None
        out.put(bits.v, bits.w)
        return out.to_bytes()

    # ---- parsers and controls ----

    def run_parser(self, parser, bits, env):
        self.scope = self.scopes[parser['name']]
        self.frames = [env]
        self.pkt_in = (parser['params'][0][0], bits)
        self.pkt_out = None
        states = {s['name']: s for s in parser['states']}
        state = 'start'
        for _ in range(1000):
            if state == 'accept':
                return
            if state == 'reject':
                raise ExecError('parser reject')
            s = states[state]
            self.coverage.add(('state', parser['name'], state))
            for c in s.get('components', []):
                self.stmt(c)
            sel = s.get('selectExpression')
            if sel['Node_Type'] == 'PathExpression':
                state = sel['path']['name']
                continue
            keys = [self.eval(e) for e in sel['select']['components']]
            widths = [self.width_of(e) for e in sel['select']['components']]
            for case in sel['selectCases']:
                if self.keyset_match(case['keyset'], keys, widths):
                    state = case['state']['path']['name']
                    break
            else:
                state = 'reject'
        raise ExecError('parser loop')

    def keyset_match(self, ks, keys, widths):
        nt = ks['Node_Type']
        if nt == 'DefaultExpression':
            return True
        if nt == 'ListExpression':
            return all(self.key_match(k, v, w) for k, v, w in zip(ks['components'], keys, widths))
        return self.key_match(ks, keys[0], widths[0])

    def key_match(self, k, v, w):
        nt = k['Node_Type']
        if nt == 'DefaultExpression':
            return True
        if nt == 'Mask':
            m = self.eval(k['right'])
            return (v & m) == (self.eval(k['left']) & m)
        if nt == 'Range':
            return self.eval(k['left']) <= v <= self.eval(k['right'])
        kv = self.eval(k)
        if isinstance(kv, bool) or isinstance(v, bool):
            return bool(kv) == bool(v)
        return (kv & mask(w)) == v

    def run_control(self, ctl, env, pkt=None):
        self.scope = self.scopes[ctl['name']]
        self.frames = [env]
        self.pkt_out = pkt
        self.pkt_in = None
        for loc in ctl.get('controlLocals', []):
            if loc['Node_Type'] == 'Declaration_Variable':
                env[loc['name']] = (self.eval(loc['initializer']) if loc.get('initializer')
                                    else self.p.new(loc['type']))
        try:
            self.stmt(ctl['body'])
        except Return:
            pass

    # ---- names ----

    def lookup(self, name):
        for fr in reversed(self.frames):
            if name in fr:
                return fr
        return None

    def local(self, name):
        return self.scope.get(name)

    # ---- statements ----

    def stmt(self, s):
        nt = s['Node_Type']
        if nt == 'BlockStatement':
            for c in s['components']:
                self.stmt(c)
        elif nt == 'AssignmentStatement':
            self.assign(s['left'], self.eval(s['right']))
        elif nt == 'MethodCallStatement':
            self.call(s['methodCall'])
        elif nt == 'IfStatement':
            c = self.eval(s['condition'])
            self.coverage.add(('if', id(s), bool(c)))
            if c:
                self.stmt(s['ifTrue'])
            elif s.get('ifFalse'):
                self.stmt(s['ifFalse'])
        elif nt == 'EmptyStatement':
            pass
        elif nt == 'Declaration_Variable':
            self.frames[-1][s['name']] = (self.eval(s['initializer']) if s.get('initializer')
                                          else self.p.new(s['type']))
        elif nt in ('ReturnStatement', 'ExitStatement'):
            raise Return()
        else:
            raise ExecError('statement %s' % nt)

    def assign(self, lhs, v):
        nt = lhs['Node_Type']
        if not isinstance(v, (int, bool)):
            v = copy.deepcopy(v)
        elif not isinstance(v, bool) and 'type' in lhs:
            t = self.p.resolve(lhs['type'])
            if t['Node_Type'] == 'Type_Bits':
                v &= mask(t['size'])
        if nt == 'PathExpression':
            fr = self.lookup(lhs['path']['name'])
            if fr is None:
                raise ExecError('no variable %s' % lhs['path']['name'])
            fr[lhs['path']['name']] = v
        elif nt == 'Member':
            obj = self.eval(lhs['expr'])
            if isinstance(obj, Header):
                obj.f[lhs['member']] = v
            else:
                obj[lhs['member']] = v
        elif nt == 'ArrayIndex':
            self.eval(lhs['left'])[self.eval(lhs['right'])] = v
        elif nt == 'Slice':
            hi, lo = self.eval(lhs['e1']), self.eval(lhs['e2'])
            old = self.eval(lhs['e0'])
            m = mask(hi - lo + 1) << lo
            self.assign(lhs['e0'], (old & ~m) | ((v << lo) & m))
        else:
            raise ExecError('assignment to %s' % nt)

    # ---- expressions ----

    def width_of(self, e):
        t = e.get('type')
        if t is None:
            raise ExecError('no type on %s' % e['Node_Type'])
        return self.p.width(t)

    def signed(self, e):
        t = self.p.resolve(e.get('type', {'Node_Type': 'Type_Unknown'}))
        return t.get('Node_Type') == 'Type_Bits' and t['isSigned']

    BIN = {
        'Add': lambda a, b: a + b, 'Sub': lambda a, b: a - b, 'Mul': lambda a, b: a * b,
        'BAnd': lambda a, b: a & b, 'BOr': lambda a, b: a | b, 'BXor': lambda a, b: a ^ b,
    }
    CMP = {
        'Equ': lambda a, b: a == b, 'Neq': lambda a, b: a != b, 'Grt': lambda a, b: a > b,
        'Geq': lambda a, b: a >= b, 'Lss': lambda a, b: a < b, 'Leq': lambda a, b: a <= b,
    }

    def eval(self, e):
        nt = e['Node_Type']
        if nt == 'Constant':
            v = e['value']
            t = self.p.resolve(e.get('type', {'Node_Type': 'Type_InfInt'}))
            return v & mask(t['size']) if t['Node_Type'] == 'Type_Bits' else v
        if nt == 'BoolLiteral':
            return e['value']
        if nt == 'PathExpression':
            name = e['path']['name']
            fr = self.lookup(name)
            if fr is not None:
                return fr[name]
            loc = self.local(name)
            if loc is not None:
                return loc
            raise ExecError('no name %s' % name)
        if nt == 'Member':
            if e['expr']['Node_Type'] == 'TypeNameExpression':
                return e['member']  # an enum member
            obj = self.eval(e['expr'])
            if isinstance(obj, Header):
                return obj.f[e['member']]
            if isinstance(obj, list) and e['member'] == 'size':
                return len(obj)
            if isinstance(obj, Written) and obj.strict and e['member'] not in obj.written \
                    and not isinstance(obj[e['member']], Header):
                self.uninit_reads.add((obj.strict, e['member']))
            return obj[e['member']]
        if nt == 'ArrayIndex':
            return self.eval(e['left'])[self.eval(e['right'])]
        if nt == 'Slice':
            hi, lo = self.eval(e['e1']), self.eval(e['e2'])
            return (self.eval(e['e0']) >> lo) & mask(hi - lo + 1)
        if nt in self.BIN:
            w = self.width_of(e)
            return self.BIN[nt](self.eval(e['left']), self.eval(e['right'])) & mask(w)
        if nt == 'Shl':
            return (self.eval(e['left']) << self.eval(e['right'])) & mask(self.width_of(e))
        if nt == 'Shr':
            return self.eval(e['left']) >> self.eval(e['right'])
        if nt in self.CMP:
            a, b = self.eval(e['left']), self.eval(e['right'])
            if isinstance(a, int) and not isinstance(a, bool) and self.signed(e['left']):
                w = self.width_of(e['left'])
                a, b = sig(a, w), sig(b & mask(w), w)
            return self.CMP[nt](a, b)
        if nt == 'LAnd':
            return bool(self.eval(e['left'])) and bool(self.eval(e['right']))
        if nt == 'LOr':
            return bool(self.eval(e['left'])) or bool(self.eval(e['right']))
        if nt == 'LNot':
            return not self.eval(e['expr'])
        if nt == 'Cmpl':
            return ~self.eval(e['expr']) & mask(self.width_of(e))
        if nt == 'Neg':
            return -self.eval(e['expr']) & mask(self.width_of(e))
        if nt == 'Cast':
            v = self.eval(e['expr'])
            t = self.p.resolve(e['destType'])
            if t['Node_Type'] == 'Type_Boolean':
                return bool(v)
            if isinstance(v, bool):
                return int(v)
            if t['Node_Type'] == 'Type_Bits':
                src = self.p.resolve(e['expr'].get('type', {'Node_Type': 'Type_InfInt'}))
                if src.get('Node_Type') == 'Type_Bits' and src['isSigned']:
                    v = sig(v, src['size'])
                return v & mask(t['size'])
            return v
        if nt == 'Concat':
            wr = self.width_of(e['right'])
            return (self.eval(e['left']) << wr) | self.eval(e['right'])
        if nt == 'Mux':
            return self.eval(e['e1']) if self.eval(e['e0']) else self.eval(e['e2'])
        if nt == 'MethodCallExpression':
            return self.call(e)
        if nt == 'ListExpression':
            return [self.eval(c) for c in e['components']]
        if nt == 'StructExpression':
            return Written({c['name']: self.eval(c['expression']) for c in e['components']})
        raise ExecError('expression %s' % nt)

    # ---- calls ----

    def call(self, mc):
        m = mc['method']
        args = [a['expression'] for a in mc['arguments']]
        if m['Node_Type'] == 'PathExpression':
            loc = self.local(m['path']['name'])
            if loc is not None and loc['Node_Type'] == 'P4Action':
                return self.run_action(loc, [self.eval(a) for a in args])
            raise ExecError('call of %s' % m['path']['name'])
        if m['Node_Type'] != 'Member':
            raise ExecError('call %s' % m['Node_Type'])
        meth = m['member']
        base = m['expr']
        if base['Node_Type'] == 'PathExpression':
            name = base['path']['name']
            if self.pkt_in and name == self.pkt_in[0]:
                return self.packet_in(meth, args)
            if self.pkt_out and name == self.pkt_out[0]:
                return self.emit_expr(args[0])
            loc = self.local(name)
            if loc is not None and self.lookup(name) is None:
                if loc['Node_Type'] == 'P4Table':
                    return self.apply_table(loc)
                if loc['Node_Type'] == 'Declaration_Instance':
                    return self.extern(loc, meth, args)
        obj = self.eval(base)
        if isinstance(obj, Header):
            if meth == 'isValid':
                return obj.valid
            if meth == 'setValid':
                obj.valid = True
                return None
            if meth == 'setInvalid':
                obj.valid = False
                return None
        raise ExecError('method %s' % meth)

    def run_action(self, act, values, cp_data=None):
        self.coverage.add(('action', act.get('cp_name', act['name'])))
        frame = {}
        for i, prm in enumerate(act['parameters']['parameters']):
            if cp_data is not None:
                key = prm.get('cp_name', prm['name'])
                if key not in cp_data:
                    raise ExecError('%s: no value for %s' % (act.get('cp_name'), key))
                v = cp_data[key]
            else:
                v = values[i]
            t = self.p.resolve(prm['type'])
            frame[prm['name']] = v & mask(t['size']) if t['Node_Type'] == 'Type_Bits' else v
        self.frames.append(frame)
        try:
            self.stmt(act['body'])
        finally:
            self.frames.pop()

    def packet_in(self, meth, args):
        bits = self.pkt_in[1]
        if meth == 'extract':
            h = self.eval(args[0])
            t = self.p.resolve(args[0]['type'])
            for f in t['fields']:
                h.f[f['name']] = bits.take(self.p.width(f['type']))
            h.valid = True
            return None
        if meth == 'advance':
            bits.take(self.eval(args[0]))
            return None
        raise ExecError('packet_in.%s' % meth)

    def emit_expr(self, e):
        """pkt.emit(x): a header, or each header of a struct or stack in order."""
        t = self.p.resolve(e['type'])
        v = self.eval(e)
        self.emit_typed(v, t)

    def emit_typed(self, v, t):
        if t['Node_Type'] == 'Type_Header':
            if v.valid:
                for f in t['fields']:
                    self.pkt_out[1].put(v.f[f['name']], self.p.width(f['type']))
        elif t['Node_Type'] == 'Type_Struct':
            for f in t['fields']:
                self.emit_typed(v[f['name']], self.p.resolve(f['type']))
        elif t['Node_Type'] in ('Type_Array', 'Type_Stack'):
            et = self.p.resolve(t['elementType'])
            for x in v:
                self.emit_typed(x, et)
        else:
            raise ExecError('emit of %s' % t['Node_Type'])

    # ---- tables ----

    def apply_table(self, t):
        pr = props(t)
        keys = pr['key']['value']['keyElements'] if 'key' in pr else []
        kv = [self.eval(k['expression']) for k in keys]
        kw = [self.width_of(k['expression']) for k in keys]
        hit = None
        if 'entries' in pr:
            for ent in pr['entries']['value']['entries']:
                comps = ent['keys']['components']
                if all(self.key_match(c, v, w) for c, v, w in zip(comps, kv, kw)):
                    hit = ('const', ent)
                    break
        if hit is None:
            best = None
            for prio, ekeys, action, data in self.entries.get(t['name'], []):
                ok = True
                for k, v in zip(keys, kv):
                    want = ekeys.get(k.get('cp_name', ''), None)
                    if want is None:
                        ok = False
                        break
                    if isinstance(want, tuple):
                        ok = (v & want[1]) == (want[0] & want[1])
                    else:
                        ok = v == want
                    if not ok:
                        break
                if ok and (best is None or prio < best[0]):
                    best = (prio, action, data)
            if best is not None:
                hit = ('cp', best)
        self.coverage.add(('table', t.get('cp_name', t['name']), hit is not None))
        if hit is not None and hit[0] == 'const':
            mc = hit[1]['action']
            self.table_action(t, mc)
        elif hit is not None:
            _, action, data = hit[1]
            act = self.find_action(t, action)
            self.run_action(act, None, cp_data=data)
        else:
            self.table_action(t, pr['default_action']['value']['expression'])
        return {'hit': hit is not None, 'miss': hit is None}

    def find_action(self, t, cp_name):
        for el in props(t)['actions']['value']['actionList']:
            a = self.local(el['expression']['method']['path']['name'])
            if a.get('cp_name') == cp_name or a['name'] == cp_name:
                return a
        raise ExecError('table %s has no action %s' % (t.get('cp_name'), cp_name))

    def table_action(self, t, mc):
        act = self.local(mc['method']['path']['name'])
        self.run_action(act, [self.eval(a['expression']) for a in mc['arguments']])

    # ---- externs ----

    def extern(self, inst, meth, args):
        base = inst['type'].get('base') if inst['type']['Node_Type'] == 'Type_Specialized' \
            else inst['type'].get('name')
        if base == 'RegisterAction' and meth == 'execute':
            return self.reg_action(inst, self.eval(args[0]), args[1:])
        if base == 'Hash' and meth == 'get':
            return self.hash_get(inst, args[0])
        if base == 'Counter' and meth == 'count':
            c = self.counters.setdefault(inst.get('cp_name', inst['name']), {})
            i = self.eval(args[0])
            c[i] = c.get(i, 0) + 1
            return None
        if base == 'DirectCounter' and meth == 'count':
            c = self.counters.setdefault(inst.get('cp_name', inst['name']), {})
            c['direct'] = c.get('direct', 0) + 1
            return None
        if base == 'Checksum' and meth == 'update':
            return self.ipv4_csum(args[0])
        if base == 'Resubmit' and meth == 'emit':
            v = self.eval(args[0])
            t = self.p.resolve(args[0]['type'])
            b = Bits()
            for f in t['fields']:
                b.put(v.f[f['name']], self.p.width(f['type']))
            self.resubmitted = b.v
            return None
        raise ExecError('extern %s.%s' % (base, meth))

    def reg_action(self, inst, idx, outs=()):
        """RegisterAction.execute(index, rv2...): apply's value, its first
        output returned, the others (Tofino 2) written to the out arguments."""
        reg = self.local(inst['arguments'][0]['expression']['path']['name'])
        size = reg['arguments'][0]['expression']['value']
        if not 0 <= idx < size:
            raise ExecError('%s index %d past %d' % (reg.get('cp_name'), idx, size))
        store = self.regs.setdefault(reg['name'], {})
        fn = inst['initializer']['components'][0]
        vname = fn['params'][0][0]
        rets = fn['params'][1:]
        if len(outs) > len(rets) - 1:
            raise ExecError('%s: %d outputs, apply has %d' % (inst.get('cp_name'), len(outs) + 1,
                                                             len(rets)))
        value = copy.deepcopy(store.get(idx, self.reg_init(reg)))
        frame = {vname: value}
        frame.update({name: 0 for name, _, _ in rets})
        self.frames.append(frame)
        self.coverage.add(('regaction', inst.get('cp_name', inst['name'])))
        try:
            self.stmt(fn['body'])
        finally:
            self.frames.pop()
        store[idx] = frame[vname]
        for (name, _, t), lhs in zip(rets[1:], outs):
            self.assign(lhs, frame[name] & mask(self.p.width(t)))
        return frame[rets[0][0]] & mask(self.p.width(rets[0][2])) if rets else None

    def concat(self, list_expr):
        v, w = 0, 0
        for c in list_expr['components']:
            cw = self.width_of(c)
            v = (v << cw) | (self.eval(c) & mask(cw))
            w += cw
        return v, w

    def hash_get(self, inst, arg):
        out_w = self.p.width(inst['type']['arguments'][0])
        algo = inst['arguments'][0]['expression']['member']
        v, w = self.concat(arg)
        if algo == 'IDENTITY':
            return v & mask(out_w)
        if algo == 'CRC32':
            if w % 8:
                raise ExecError('CRC32 over %d bits' % w)
            return zlib.crc32(v.to_bytes(w // 8, 'big')) & mask(out_w)
        raise ExecError('hash %s' % algo)

    def ipv4_csum(self, arg):
        v, w = self.concat(arg)
        if w % 16:
            raise ExecError('checksum over %d bits' % w)
        s = 0
        for i in range(w // 16):
            s += (v >> (16 * i)) & 0xffff
        while s >> 16:
            s = (s & 0xffff) + (s >> 16)
        return ~s & 0xffff


def coverage(sw):
    """What the packets sw ran took of its program, against what the program
    has: {kind: (taken, all)} for actions, register actions, tables and if
    branches (two per if statement), by name (ifs by position)."""
    allv = {'actions': set(), 'register actions': set(), 'tables': set(), 'if branches': set()}

    def walk(x):
        if isinstance(x, dict):
            if x.get('Node_Type') == 'IfStatement':
                allv['if branches'].update({(id(x), True), (id(x), False)})
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    p = sw.p
    for ctl in (p.ig_parser, p.ingress, p.ig_deparser, p.eg_parser, p.egress, p.eg_deparser):
        walk(ctl)
        for loc in ctl.get('controlLocals', []):
            name = loc.get('cp_name', loc['name'])
            if loc['Node_Type'] == 'P4Action' and not loc['name'].startswith('NoAction'):
                allv['actions'].add(name)
            elif loc['Node_Type'] == 'P4Table':
                allv['tables'].add(name)
            elif loc['Node_Type'] == 'Declaration_Instance' and \
                    loc['type'].get('base') == 'RegisterAction':
                allv['register actions'].add(name)
    taken = {'actions': {c[1] for c in sw.coverage if c[0] == 'action'},
             'register actions': {c[1] for c in sw.coverage if c[0] == 'regaction'},
             'tables': {c[1] for c in sw.coverage if c[0] == 'table'},
             'if branches': {(c[1], c[2]) for c in sw.coverage if c[0] == 'if'}}
    return {k: (taken[k] & allv[k], allv[k]) for k in allv}
