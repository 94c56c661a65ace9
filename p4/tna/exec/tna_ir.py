#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tna_ir.py - the Tofino program's IR as tna_exec.py runs it.

p4c-barefoot --toJSON writes the program after bf-p4c's front and mid end
(24 MB: every type of every expression, source positions, the whole of
tna.p4's extern declarations). This keeps what execution needs: the headers
and structs, the parsers and controls, the `pipe` instance, expression types
as widths, and each object's control-plane name (@name). References between
nodes (Node_ID) are resolved into a tree.

    tna_ir.py COMPILER_JSON OUT_JSON
"""
import json
import sys

KEEP_TOP = ('Type_Header', 'Type_Struct', 'Type_Typedef', 'Type_Enum', 'Type_SerEnum',
            'P4Parser', 'P4Control')
DROP_KEYS = ('Node_ID', 'Source_Info', 'srcInfo', 'declid', 'declarations',
             'constructorParams', 'typeParameters')


def index(obj):
    ids = {}

    def walk(x):
        if isinstance(x, dict):
            if 'Node_ID' in x and len(x) > 1:
                ids[x['Node_ID']] = x
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(obj)
    return ids


def lower_type(t, ids):
    """A type as execution needs it: bits (width, signed), bool, or a name."""
    t = ids.get(t['Node_ID'], t) if set(t) == {'Node_ID'} else t
    nt = t.get('Node_Type')
    if nt == 'Type_Bits':
        return {'Node_Type': 'Type_Bits', 'size': t['size'], 'isSigned': t['isSigned']}
    if nt == 'Type_Boolean':
        return {'Node_Type': 'Type_Boolean'}
    if nt == 'Type_Name':
        return {'Node_Type': 'Type_Name', 'name': t['path']['name']}
    if nt == 'Type_Specialized':
        return {'Node_Type': 'Type_Specialized',
                'base': lower_type(t['baseType'], ids).get('name'),
                'arguments': [lower_type(a, ids) for a in t['arguments']['vec']]}
    if nt in ('Type_Header', 'Type_Struct', 'Type_Extern', 'Type_Enum', 'Type_SerEnum',
              'Type_Typedef', 'Type_Stack', 'Type_Array'):
        out = {'Node_Type': nt, 'name': t.get('name')}
        if nt in ('Type_Stack', 'Type_Array'):
            out['elementType'] = lower_type(t['elementType'], ids)
            out['size'] = lower(t['size'], ids)
        return out
    if nt == 'Type_SpecializedCanonical':
        return {'Node_Type': nt, 'name': lower_type(t['baseType'], ids).get('name')}
    return {'Node_Type': nt}


def name_of(annotations, ids):
    for a in lower_list(annotations, ids):
        if a.get('name') == 'name':
            body = a.get('body', {})
            for v in body.get('value', {}).get('vec', []) if isinstance(body, dict) else []:
                v = ids.get(v['Node_ID'], v) if set(v) == {'Node_ID'} else v
                if v.get('Node_Type') == 'StringLiteral':
                    return v['value']
    return None


def params_of(t, ids):
    """A parser's, control's or function's parameters: [[name, direction, type]]."""
    t = ids.get(t['Node_ID'], t) if set(t) == {'Node_ID'} else t
    pl = t.get('applyParams') or t.get('parameters')
    out = []
    for p in lower_list(pl.get('parameters', pl) if isinstance(pl, dict) else pl, ids):
        p = ids.get(p['Node_ID'], p) if set(p) == {'Node_ID'} else p
        out.append([p['name'], p.get('direction', ''), lower_type(p['type'], ids)])
    return out


def lower_list(x, ids):
    x = ids.get(x['Node_ID'], x) if isinstance(x, dict) and set(x) == {'Node_ID'} else x
    return x.get('vec', []) if isinstance(x, dict) else []


def lower(x, ids):
    if isinstance(x, dict):
        if set(x) == {'Node_ID'}:
            x = ids[x['Node_ID']]
        out = {}
        for k, v in x.items():
            if k in DROP_KEYS:
                continue
            if k == 'annotations':
                n = name_of(v, ids)
                if n is not None:
                    out['cp_name'] = n
                continue
            if k == 'type' and x.get('Node_Type') in ('P4Parser', 'P4Control', 'Function'):
                out['params'] = params_of(v, ids)
                continue
            if k in ('type', 'elementType') and isinstance(v, dict):
                out[k] = lower_type(v, ids)
                continue
            out[k] = lower(v, ids)
        # IndexedVector / Vector: the list itself
        if set(out) <= {'Node_Type', 'vec'} and 'vec' in out and \
                str(out.get('Node_Type', '')).startswith(('Vector', 'IndexedVector')):
            return out['vec']
        return out
    if isinstance(x, list):
        return [lower(v, ids) for v in x]
    return x


def main(argv):
    if len(argv) != 3:
        sys.stderr.write('usage: tna_ir.py COMPILER_JSON OUT_JSON\n')
        return 2
    with open(argv[1]) as f:
        prog = json.load(f)
    ids = index(prog)
    objs = []
    for o in prog['objects']['vec']:
        o = ids.get(o['Node_ID'], o) if set(o) == {'Node_ID'} else o
        if o.get('Node_Type') in KEEP_TOP or o.get('name') == 'pipe':
            objs.append(lower(o, ids))
    with open(argv[2], 'w') as f:
        json.dump({'serene_tna_ir': 1, 'objects': objs}, f, separators=(',', ':'),
                  sort_keys=True)
        f.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
