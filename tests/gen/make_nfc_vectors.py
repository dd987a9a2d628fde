#!/usr/bin/python3
"""NFC golden cases for tests/test_tokenizer.c from Python's unicodedata (standard library only).

    /usr/bin/python3 tests/gen/make_nfc_vectors.py > tests/data/tokenizer/nfc.txt

One case per line: "input => expected", each a space-separated list of hex code points."""
import random
import unicodedata as ud

MARKS = [0x300, 0x301, 0x302, 0x303, 0x308, 0x30A, 0x316, 0x317, 0x323, 0x327, 0x328, 0x331,
         0x334, 0x338, 0x345, 0x35C, 0x360, 0x5B0, 0x5BC, 0x93C, 0x94D, 0x3099, 0x309A, 0x1D165]
BASES = [0x41, 0x61, 0x45, 0x65, 0x4F, 0x6F, 0x55, 0x75, 0x3B1, 0x3C9, 0x5D0, 0x915, 0x304B,
         0x1100, 0xAC00, 0x3C, 0x3D, 0x20, 0x1E0A, 0xC5, 0x212B]


def line(cps):
    out = ud.normalize('NFC', ''.join(map(chr, cps)))
    return '%s => %s' % (' '.join('%04X' % c for c in cps), ' '.join('%04X' % ord(c) for c in out))


def main():
    rows = []
    for cp in range(0x110000):
        d = ud.decomposition(chr(cp))
        if 0xAC00 <= cp < 0xAC00 + 11172:
            continue
        if d and not d.startswith('<'):
            rows.append(line([cp]))
            nfd = [ord(c) for c in ud.normalize('NFD', chr(cp))]
            if nfd != [cp]:
                rows.append(line(nfd))
    rng = random.Random(1)
    for _ in range(200):  # Hangul: syllables, jamo sequences, syllable + trailing jamo
        s = 0xAC00 + rng.randrange(11172)
        rows.append(line([s]))
        rows.append(line([ord(c) for c in ud.normalize('NFD', chr(s))]))
        rows.append(line([0x1100 + rng.randrange(19), 0x1161 + rng.randrange(21)]))
        rows.append(line([0xAC00 + 28 * rng.randrange(399), 0x11A8 + rng.randrange(27)]))
    for _ in range(600):  # bases with marks in random order, sometimes with a starter between
        seq = [rng.choice(BASES)]
        for _ in range(rng.randrange(1, 6)):
            seq.append(rng.choice(MARKS) if rng.random() < 0.85 else rng.choice(BASES))
        rows.append(line(seq))
    rows += [line([0x301]), line([0x301, 0x65]), line([0x65, 0x301, 0x301]),
             line([0x1E0A, 0x323]), line([0x44, 0x307, 0x323]), line([0x212B]), line([0x958]),
             line([0x2126, 0x301]), line([0xF900]), line([0x1D15E, 0x1D165]), line([0x344]),
             line([0xFB2C, 0x5B0]), line([0x61, 0x5AE, 0x300, 0x301, 0x316])]
    print('\n'.join(rows))


if __name__ == '__main__':
    main()
