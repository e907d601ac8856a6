#!/usr/bin/env python3
"""Writes and reads .npy files for the CLI tests, with the standard library
only (no NumPy on the test machines).

  npytool.py write PATH DESCR SHAPE VALUE...   e.g. write x.npy '<f4' 2,3 1 2 3 4 5 6
                                               (SHAPE '' is a 0-d array; VALUE 'arange'
                                               fills 0, 1, 2, ...; a single VALUE repeats)
  npytool.py header PATH HEADER [BYTES]        magic, version 1.0, the given header text,
                                               then BYTES zero bytes of data
  npytool.py read PATH                         prints 'DESCR SHAPE' then one value a line
  npytool.py bits VALUE DTYPE                  prints the 16-bit pattern of VALUE as f16/bf16
"""
import struct
import sys

CODES = {'b1': '?', 'i1': 'b', 'i2': 'h', 'i4': 'i', 'i8': 'q', 'u1': 'B', 'u2': 'H',
         'u4': 'I', 'u8': 'Q', 'f2': 'e', 'f4': 'f', 'f8': 'd', 'V2': 'H'}


def header_bytes(text, version=1):
    text = text + ' ' * ((64 - (10 + len(text) + 1) % 64) % 64) + '\n'
    return b'\x93NUMPY' + bytes([version, 0]) + struct.pack('<H', len(text)) + text.encode('latin1')


def layout(descr):
    order = '>' if descr[0] == '>' else '<'
    return order, CODES[descr[1:]]


def write(path, descr, shape_text, values):
    shape = tuple(int(s) for s in shape_text.split(',') if s)
    n = 1
    for d in shape:
        n *= d
    if values == ['arange']:
        values = [str(i) for i in range(n)]
    elif len(values) == 1:
        values = values * n
    if len(values) != n:
        sys.exit(f'npytool: {n} values needed, {len(values)} given')
    order, code = layout(descr)
    conv = float if code in 'efd' else (lambda v: v in ('1', 'True', 'true')) if code == '?' else lambda v: int(v, 0)
    shape_repr = f'({shape[0]},)' if len(shape) == 1 else '(' + ', '.join(str(d) for d in shape) + ')'
    head = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_repr)
    with open(path, 'wb') as f:
        f.write(header_bytes(head))
        f.write(struct.pack(order + code * n, *[conv(v) for v in values]))


def read(path):
    data = open(path, 'rb').read()
    assert data[:6] == b'\x93NUMPY', 'bad magic'
    hlen = struct.unpack('<H', data[8:10])[0] if data[6] == 1 else struct.unpack('<I', data[8:12])[0]
    start = 10 if data[6] == 1 else 12
    head = eval(data[start:start + hlen].decode('latin1'))  # the tests' own files
    body = data[start + hlen:]
    n = 1
    for d in head['shape']:
        n *= d
    order, code = layout(head['descr'])
    assert len(body) == n * struct.calcsize(code), 'body size'
    print(head['descr'], ','.join(str(d) for d in head['shape']))
    for v in struct.unpack(order + code * n, body):
        print(repr(v))


def bits(value, dtype):
    if dtype == 'f16':
        print(struct.unpack('<H', struct.pack('<e', float(value)))[0])
    else:  # bf16: the top half of the f32 pattern, rounded to nearest even
        u = struct.unpack('<I', struct.pack('<f', float(value)))[0]
        print((u + 0x7fff + ((u >> 16) & 1)) >> 16)


def main(argv):
    if argv[0] == 'write':
        write(argv[1], argv[2], argv[3], argv[4:])
    elif argv[0] == 'header':
        with open(argv[1], 'wb') as f:
            f.write(header_bytes(argv[2]))
            f.write(bytes(int(argv[3]) if len(argv) > 3 else 0))
    elif argv[0] == 'read':
        read(argv[1])
    elif argv[0] == 'bits':
        bits(argv[1], argv[2])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv[1:])
