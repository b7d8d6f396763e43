"""Reads an 8-bit RGB or RGBA PNG into pixels with the standard library alone, for the
screenshot checks (scripts/screenshot-check.sh, scripts/plot-screenshot-check.sh), which must
run on a machine with nothing but python3.

    import png_pixels
    w, h, pixels = png_pixels.read(path)     # pixels: a list of (r, g, b), row by row
    png_pixels.inked(pixels)                 # the share of pixels darker than near-white
"""
import struct
import zlib


class PngError(Exception):
    """The file is not a PNG this reader takes."""


def read(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise PngError("not a PNG")
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        chunks.setdefault(kind, []).append(data[pos + 8:pos + 8 + length])
        pos += 12 + length
    w, h, depth, ctype = struct.unpack(">IIBB", chunks[b"IHDR"][0][:10])
    if depth != 8 or ctype not in (2, 6):
        raise PngError(f"unexpected PNG format (depth {depth}, colour type {ctype})")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        # Undo the row's filter (PNG specification, section 9).
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    pixels = [(r[x], r[x + 1], r[x + 2]) for r in rows for x in range(0, stride, bpp)]
    return w, h, pixels


def inked(pixels):
    return sum(1 for p in pixels if min(p) < 200) / len(pixels)
