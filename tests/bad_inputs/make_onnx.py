#!/usr/bin/env python3
"""Writes the ONNX files of the bad-input corpus (and one good model, a fuzz
seed) with nothing but the standard library: the protobuf wire format is
written by hand, so that models the onnx package would refuse to build can
be made, and no onnx Python package is needed. Run from anywhere:

    /usr/bin/python3 tests/bad_inputs/make_onnx.py

Field numbers are onnx.proto's (ModelProto, GraphProto, NodeProto, ...).
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FLOAT, INT64 = 1, 7              # TensorProto.DataType
ATTR_INT, ATTR_INTS = 2, 7       # AttributeProto.AttributeType


def varint(n):
    n &= (1 << 64) - 1           # negative int64: ten bytes of two's complement
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, value):
    if isinstance(value, str):
        value = value.encode()
    return varint(number << 3 | 2) + varint(len(value)) + value


def tensor(name, dims, data_type, values):
    raw = struct.pack("<%d%s" % (len(values), "f" if data_type == FLOAT else "q"), *values)
    return (b"".join(field_varint(1, d) for d in dims) + field_varint(2, data_type) +
            field_bytes(8, name) + field_bytes(9, raw))


def value_info(name, elem_type, dims):
    shape = b"".join(field_bytes(1, field_varint(1, d)) for d in dims)
    tensor_type = field_varint(1, elem_type) + field_bytes(2, shape)
    return field_bytes(1, name) + field_bytes(2, field_bytes(1, tensor_type))


def attr_int(name, value):
    return field_bytes(1, name) + field_varint(3, value) + field_varint(20, ATTR_INT)


def attr_ints(name, values):
    return field_bytes(1, name) + b"".join(field_varint(8, v) for v in values) + field_varint(20, ATTR_INTS)


def node(op_type, inputs, outputs, name=None, attrs=()):
    out = b"".join(field_bytes(1, i) for i in inputs) + b"".join(field_bytes(2, o) for o in outputs)
    out += field_bytes(3, name if name is not None else outputs[0] if outputs else op_type)
    out += field_bytes(4, op_type)
    return out + b"".join(field_bytes(5, a) for a in attrs)


def model(nodes, inputs, outputs, initializers=()):
    graph = b"".join(field_bytes(1, n) for n in nodes) + field_bytes(2, "g")
    graph += b"".join(field_bytes(5, t) for t in initializers)
    graph += b"".join(field_bytes(11, v) for v in inputs) + b"".join(field_bytes(12, v) for v in outputs)
    opset = field_bytes(1, "") + field_varint(2, 13)
    return field_varint(1, 8) + field_bytes(2, "devplace-bad-inputs") + field_bytes(7, graph) + field_bytes(8, opset)


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    x = value_info("x", FLOAT, [2, 4])
    w = tensor("w", [4, 3], FLOAT, [0.5] * 12)
    good = model([node("MatMul", ["x", "w"], ["y"]), node("Relu", ["y"], ["z"])], [x], [value_info("z", FLOAT, [2, 3])], [w])
    write("good_mlp.onnx", good)
    write("onnx_truncated.onnx", good[: len(good) // 2])

    # Integer constant folding of INT64_MIN / -1 and INT64_MIN % -1 (SIGFPE on x86).
    lo = tensor("lo", [1], INT64, [-(1 << 63)])
    minus_one = tensor("minus_one", [1], INT64, [-1])
    for op in ("Div", "Mod"):
        write("onnx_int64_min_%s.onnx" % op.lower(),
              model([node(op, ["lo", "minus_one"], ["q"]), node("Reshape", ["x", "q"], ["r"])], [x],
                    [value_info("r", FLOAT, [8])], [lo, minus_one]))

    # Zero strides: libonnx's own shape inference divides by them.
    img = value_info("img", FLOAT, [1, 1, 4, 4])
    kernel = tensor("k", [1, 1, 2, 2], FLOAT, [1.0] * 4)
    out = value_info("out", FLOAT, [1, 1, 3, 3])
    write("onnx_conv_zero_stride.onnx",
          model([node("Conv", ["img", "k"], ["out"], attrs=[attr_ints("strides", [0, 0])])], [img], [out], [kernel]))
    write("onnx_maxpool_zero_stride.onnx",
          model([node("MaxPool", ["img"], ["out"], attrs=[attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [0, 0])])],
                [img], [out]))
    write("onnx_conv_negative_pad.onnx",
          model([node("Conv", ["img", "k"], ["out"], attrs=[attr_ints("pads", [-9, -9, -9, -9])])], [img], [out], [kernel]))

    # Malformed nodes: an empty input name, a missing input, a non-UTF-8 name.
    write("onnx_concat_empty_input.onnx",
          model([node("Concat", ["", "x"], ["c"], attrs=[attr_int("axis", 0)])], [x], [value_info("c", FLOAT, [2, 4])]))
    write("onnx_shape_no_input.onnx", model([node("Shape", [], ["s"])], [x], [value_info("s", INT64, [2])]))
    write("onnx_node_name_not_utf8.onnx",
          model([node("Relu", ["x"], ["z"], name=b"relu\xff\xfe\n")], [x], [value_info("z", FLOAT, [2, 4])]))
    write("onnx_huge_dims.onnx",
          model([node("Relu", ["h"], ["z"])], [value_info("h", FLOAT, [1 << 40, 1 << 40])], [value_info("z", FLOAT, [1 << 40, 1 << 40])]))


if __name__ == "__main__":
    main()
