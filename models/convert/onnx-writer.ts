// Hand-written protobuf encoder for the subset of onnx.proto the converter emits.
// Field numbers follow onnx/onnx.proto (IR version 7); only what OpenCV and onnxruntime read is written.

export const enum OnnxDataType {
  FLOAT = 1,
  UINT8 = 2,
  INT8 = 3,
  INT32 = 6,
  INT64 = 7,
  BOOL = 9,
}

export interface OnnxTensor {
  name: string;
  dataType: OnnxDataType;
  dims: number[];
  /** Little-endian element bytes. */
  raw: Uint8Array;
}

export type OnnxAttributeValue =
  | { kind: 'int'; value: number }
  | { kind: 'float'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'ints'; value: number[] }
  | { kind: 'floats'; value: number[] }
  | { kind: 'tensor'; value: OnnxTensor };

export interface OnnxNode {
  name: string;
  opType: string;
  inputs: string[];
  outputs: string[];
  attributes: Record<string, OnnxAttributeValue>;
}

export interface OnnxValueInfo {
  name: string;
  dataType: OnnxDataType;
  /** Absent: the shape is left to the runtime (extra calibration outputs). A string is a named open dimension. */
  shape?: (number | string)[];
}

export interface OnnxModel {
  producer: string;
  opset: number;
  graphName: string;
  nodes: OnnxNode[];
  initializers: OnnxTensor[];
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
}

const WIRE_VARINT = 0;
const WIRE_FIXED32 = 5;
const WIRE_LENGTH = 2;

class ProtoWriter {
  private chunks: Uint8Array[] = [];
  private size = 0;

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.size += bytes.length;
  }

  private varint(value: number | bigint): void {
    // Negative int64 values are encoded as ten-byte two's complement, as protobuf requires.
    let v = BigInt.asUintN(64, BigInt(value));
    const out: number[] = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  int(field: number, value: number): this {
    this.tag(field, WIRE_VARINT);
    this.varint(value);
    return this;
  }

  float(field: number, value: number): this {
    this.tag(field, WIRE_FIXED32);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.push(b);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LENGTH);
    this.varint(value.length);
    this.push(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, build: (w: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    build(inner);
    return this.bytes(field, inner.finish());
  }

  packedInts(field: number, values: number[]): this {
    const inner = new ProtoWriter();
    for (const v of values) inner.varint(v);
    return this.bytes(field, inner.finish());
  }

  packedFloats(field: number, values: number[]): this {
    const b = new Uint8Array(values.length * 4);
    const dv = new DataView(b.buffer);
    values.forEach((v, i) => dv.setFloat32(i * 4, v, true));
    return this.bytes(field, b);
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let offset = 0;
    for (const c of this.chunks) {
      out.set(c, offset);
      offset += c.length;
    }
    return out;
  }
}

function writeTensor(w: ProtoWriter, t: OnnxTensor): void {
  w.packedInts(1, t.dims).int(2, t.dataType).string(8, t.name).bytes(9, t.raw);
}

const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_STRING = 3;
const ATTR_TENSOR = 4;
const ATTR_FLOATS = 6;
const ATTR_INTS = 7;

function writeAttribute(w: ProtoWriter, name: string, a: OnnxAttributeValue): void {
  w.string(1, name);
  switch (a.kind) {
    case 'float':
      w.float(2, a.value).int(20, ATTR_FLOAT);
      break;
    case 'int':
      w.int(3, a.value).int(20, ATTR_INT);
      break;
    case 'string':
      w.string(4, a.value).int(20, ATTR_STRING);
      break;
    case 'tensor':
      w.message(5, (t) => writeTensor(t, a.value)).int(20, ATTR_TENSOR);
      break;
    case 'floats':
      w.packedFloats(7, a.value).int(20, ATTR_FLOATS);
      break;
    case 'ints':
      w.packedInts(8, a.value).int(20, ATTR_INTS);
      break;
  }
}

function writeValueInfo(w: ProtoWriter, v: OnnxValueInfo): void {
  w.string(1, v.name).message(2, (type) =>
    type.message(1, (tensor) =>
      {
        tensor.int(1, v.dataType);
        const dims = v.shape;
        // Dimension: dim_value (1) or, for an open size, dim_param (2)
        if (dims) tensor.message(2, (shape) => dims.forEach((d) => shape.message(1, (dim) => (typeof d === 'number' ? dim.int(1, d) : dim.string(2, d)))));
      },
    ),
  );
}

export function encodeOnnxModel(model: OnnxModel): Uint8Array {
  const w = new ProtoWriter();
  w.int(1, 7); // ir_version
  w.string(2, model.producer);
  w.message(7, (g) => {
    for (const n of model.nodes) {
      g.message(1, (nw) => {
        for (const i of n.inputs) nw.string(1, i);
        for (const o of n.outputs) nw.string(2, o);
        nw.string(3, n.name).string(4, n.opType);
        for (const [name, a] of Object.entries(n.attributes)) nw.message(5, (aw) => writeAttribute(aw, name, a));
      });
    }
    g.string(2, model.graphName);
    for (const t of model.initializers) g.message(5, (tw) => writeTensor(tw, t));
    for (const v of model.inputs) g.message(11, (vw) => writeValueInfo(vw, v));
    for (const v of model.outputs) g.message(12, (vw) => writeValueInfo(vw, v));
  });
  w.message(8, (o) => o.string(1, '').int(2, model.opset));
  return w.finish();
}
