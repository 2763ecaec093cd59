"""A minimal safetensors writer/reader from the format description (8-byte little-endian header
length, JSON header, raw little-endian data), independent of shardtune's C++ code."""
import json
import struct

import torch

DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}
TORCH_DTYPES = {v: k for k, v in DTYPES.items()}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: reinterpret the bits
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        data = tensor_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    data = raw[8 + length:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = TORCH_DTYPES[info["dtype"]]
        buffer = bytearray(data[begin:end])
        if dtype == torch.bfloat16:
            t = torch.frombuffer(buffer, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(buffer, dtype=dtype)
        out[name] = t.reshape(info["shape"]).clone()
    return out
