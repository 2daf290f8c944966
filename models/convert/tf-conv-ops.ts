// TF's convolutions, dense layers and pooling as ONNX Conv, Gemm and pooling nodes, with TF's fused activations.
import { float, int, ints } from './onnx-graph-builder.js';
import { transposeTensor } from './tensor-transform.js';
import { attrBool, attrFloat, attrInts, attrString, attrStrings, type TfNode } from './tfjs-graph.js';
import type { OpContext } from './tf-op-context.js';
import { constOf, dyn, out, type Value } from './tf-values.js';

function samePads(inSize: number, kernel: number, stride: number, dilation: number): [number, number] {
  const effective = (kernel - 1) * dilation + 1;
  const out = Math.ceil(inSize / stride);
  const total = Math.max((out - 1) * stride + effective - inSize, 0);
  // TF puts the odd pixel after, unlike ONNX's auto_pad=SAME_UPPER symmetric guess; explicit pads are exact.
  return [Math.floor(total / 2), total - Math.floor(total / 2)];
}

/** The activation TF fused into a convolution or MatMul, applied to `input`; `input` itself when there is none. */
function activation(ctx: OpContext, node: TfNode, ops: string[], input: string, name: string): string {
  const rest = ops.filter((o) => o !== 'BiasAdd');
  if (rest.length === 0) return input;
  if (rest.length > 1) throw new Error(`${node.name}: fused ops ${ops.join(',')} are not supported`);
  switch (rest[0]) {
    case 'Relu':
      return ctx.b.node('Relu', [input], name);
    case 'Relu6':
      return ctx.b.clip(input, 0, 6, name);
    case 'Elu':
      return ctx.b.node('Elu', [input], name);
    case 'LeakyRelu':
      return ctx.b.node('LeakyRelu', [input], name, { alpha: float(attrFloat(node, 'leakyrelu_alpha', 0.2)) });
    case 'Sigmoid':
      return ctx.b.node('Sigmoid', [input], name);
    default:
      throw new Error(`${node.name}: fused activation ${rest[0]} is not supported`);
  }
}

/** A convolution's ONNX pads [top, left, bottom, right] from TF's padding attribute. */
function convPads(node: TfNode, [ih, iw]: number[], [kh, kw]: number[], [sh, sw]: number[], [dh, dw]: number[]): number[] {
  const padding = attrString(node, 'padding');
  if (padding === 'SAME') {
    const [pt, pb] = samePads(ih, kh, sh, dh);
    const [pl, pr] = samePads(iw, kw, sw, dw);
    return [pt, pl, pb, pr];
  }
  if (padding === 'EXPLICIT') {
    const e = attrInts(node, 'explicit_paddings');
    return [e[2], e[4], e[3], e[5]];
  }
  return [0, 0, 0, 0];
}

export function conv(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const x = dyn(node, inputs[0]);
  const filter = constOf(node, inputs[1]);
  const depthwise = node.op.includes('Depthwise');
  const fused = attrStrings(node, 'fused_ops');
  if (attrString(node, 'data_format') && attrString(node, 'data_format') !== 'NHWC') throw new Error(`${node.name}: only NHWC`);
  const [kh, kw, cin, cm] = filter.shape;
  const strides = attrInts(node, 'strides');
  const dil = attrInts(node, 'dilations');
  const [sh, sw] = strides.length ? [strides[1], strides[2]] : [1, 1];
  const [dh, dw] = dil.length ? [dil[1], dil[2]] : [1, 1];
  const [, ih, iw] = x.shape;
  const pads = convPads(node, [ih, iw], [kh, kw], [sh, sw], [dh, dw]);
  // TF HWIO (or HW C M for depthwise) -> ONNX OIHW; depthwise becomes a grouped conv.
  const weight = depthwise
    ? { ...transposeTensor(filter, [2, 3, 0, 1]), shape: [cin * cm, 1, kh, kw] }
    : transposeTensor(filter, [3, 2, 0, 1]);
  const cout = depthwise ? cin * cm : cm;
  const convInputs = [b.nchw(x), b.constant(weight, `${node.name}/weights`)];
  if (fused.includes('BiasAdd')) convInputs.push(b.constant(constOf(node, inputs[2]), `${node.name}/bias`));
  const oh = Math.floor((ih + pads[0] + pads[2] - ((kh - 1) * dh + 1)) / sh) + 1;
  const ow = Math.floor((iw + pads[1] + pads[3] - ((kw - 1) * dw + 1)) / sw) + 1;
  const hasActivation = fused.some((o) => o !== 'BiasAdd');
  const convName = hasActivation ? b.unique(`${node.name}/conv`) : name;
  b.node('Conv', convInputs, convName, {
    kernel_shape: ints([kh, kw]),
    strides: ints([sh, sw]),
    dilations: ints([dh, dw]),
    pads: ints(pads),
    group: int(depthwise ? cin : 1),
  });
  const result = activation(ctx, node, fused, convName, name);
  return out(node, [x.shape[0], oh, ow, cout], true, result);
}

export function matmul(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const b = ctx.b;
  const x = dyn(node, inputs[0]);
  const w = constOf(node, inputs[1]);
  if (x.shape.length !== 2) throw new Error(`${node.name}: MatMul input must be 2-D`);
  if (attrBool(node, 'transpose_a')) throw new Error(`${node.name}: transpose_a is not supported`);
  // OpenCV 4.6 takes Gemm weights only as [N, K] with transB = 1.
  const weight = attrBool(node, 'transpose_b') ? w : transposeTensor(w, [1, 0]);
  const fused = attrStrings(node, 'fused_ops');
  const gemmInputs = [b.tfLayout(x, node.name), b.constant(weight, `${node.name}/weights`)];
  if (fused.includes('BiasAdd')) gemmInputs.push(b.constant(constOf(node, inputs[2]), `${node.name}/bias`));
  const hasActivation = fused.some((o) => o !== 'BiasAdd');
  const gemmName = hasActivation ? b.unique(`${node.name}/gemm`) : name;
  b.node('Gemm', gemmInputs, gemmName, { transB: int(1), alpha: float(1), beta: float(1) });
  const result = activation(ctx, node, fused, gemmName, name);
  return out(node, [x.shape[0], weight.shape[0]], false, result);
}

export function pool(ctx: OpContext, node: TfNode, inputs: Value[], name: string): Value {
  const x = dyn(node, inputs[0]);
  const k = attrInts(node, 'ksize');
  const s = attrInts(node, 'strides');
  const [, ih, iw, c] = x.shape;
  let pads = [0, 0, 0, 0];
  if (attrString(node, 'padding') === 'SAME') {
    const [pt, pb] = samePads(ih, k[1], s[1], 1);
    const [pl, pr] = samePads(iw, k[2], s[2], 1);
    pads = [pt, pl, pb, pr];
  }
  const oh = Math.floor((ih + pads[0] + pads[2] - k[1]) / s[1]) + 1;
  const ow = Math.floor((iw + pads[1] + pads[3] - k[2]) / s[2]) + 1;
  const op = node.op === 'MaxPool' ? 'MaxPool' : 'AveragePool';
  const result = ctx.b.node(op, [ctx.b.nchw(x)], name, {
    kernel_shape: ints([k[1], k[2]]),
    strides: ints([s[1], s[2]]),
    pads: ints(pads),
  });
  return out(node, [x.shape[0], oh, ow, c], true, result);
}
