#!/usr/bin/env python3
"""Draws torchlet's kernel logos (logo-32x32.png, logo-64x64.png) with only the standard library.

A flame-orange rounded square holding a white "t" over a small memory bar: a tensor on a GPU.
"""
import struct
import zlib


def png(width, height, rows):
    """Encode RGBA rows as a PNG file."""
    raw = b"".join(b"\x00" + bytes(row) for row in rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def draw(size):
    s = size / 32.0
    rows = []
    for y in range(size):
        row = []
        for x in range(size):
            fx, fy = (x + 0.5) / s, (y + 0.5) / s  # coordinates on a 32x32 design grid
            r = 6.0  # corner radius
            cx = min(max(fx, r), 32 - r)
            cy = min(max(fy, r), 32 - r)
            inside = (fx - cx) ** 2 + (fy - cy) ** 2 <= r * r
            if not inside:
                row += [0, 0, 0, 0]
                continue
            t = fy / 32.0  # vertical gradient: orange to deep red
            color = [int(238 - 40 * t), int(104 - 60 * t), int(36 + 10 * t), 255]
            stem = 13 <= fx < 18 and 5 <= fy < 22
            bar = 9 <= fx < 23 and 10 <= fy < 14
            hook = 13 <= fx < 22 and 19 <= fy < 22
            memory = 6 <= fx < 26 and 25 <= fy < 28
            used = memory and fx < 19
            if stem or bar or hook or used:
                color = [255, 255, 255, 255]
            elif memory:
                color = [255, 210, 180, 255]
            row += color
        rows.append(row)
    return png(size, size, rows)


if __name__ == "__main__":
    for size in (32, 64):
        with open(f"logo-{size}x{size}.png", "wb") as f:
            f.write(draw(size))
