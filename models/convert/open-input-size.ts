// An onnxruntime graph whose input height and width are left open, for the YOLO detectors: a 640x480 photo then
// runs on a 640x480 input (padded to a multiple of the largest stride) instead of a 640x640 square, a quarter less
// work, and a 16:9 frame 40% less. The converter folds shapes at the manifest's square size; what depends on the
// size after that is each Resize's target, which becomes a scale here, and the input and output dimensions, which
// become named open dimensions. Any other size-bound operation makes this throw: the graph must stay correct at
// every size it accepts.

import { OnnxDataType, type OnnxModel, type OnnxNode, type OnnxTensor } from './onnx-writer.js';

/** Operations whose output shape follows their input's, whatever the size (with constant attributes and weights). */
const SIZE_FREE_OPS = new Set(['Conv', 'Relu', 'Clip', 'Sigmoid', 'Mul', 'Add', 'Sub', 'Div', 'Concat', 'MaxPool', 'Pad', 'Transpose', 'Identity', 'QuantizeLinear', 'DequantizeLinear']);

export const OPEN_HEIGHT = 'height';
export const OPEN_WIDTH = 'width';

function floatTensor(name: string, values: number[]): OnnxTensor {
  return { name, dataType: OnnxDataType.FLOAT, dims: [values.length], raw: new Uint8Array(new Float32Array(values).buffer) };
}

/**
 * The same graph with open input height and width. `resizeInputs`: each Resize node's input [height, width] at the
 * converted size (ConvertedModel.resizeInputs). The input is NCHW, the outputs NHWC as the converter writes them.
 */
export function openInputSize(model: OnnxModel, resizeInputs: ReadonlyMap<string, [number, number]>): OnnxModel {
  const initializers = [...model.initializers];
  const nodes: OnnxNode[] = model.nodes.map((n) => {
    if (n.opType !== 'Resize') {
      if (!SIZE_FREE_OPS.has(n.opType)) throw new Error(`openInputSize: ${n.name} (${n.opType}) may depend on the input size`);
      return n;
    }
    const from = resizeInputs.get(n.outputs[0]!);
    const sizes = initializers.find((t) => t.name === n.inputs[3]);
    if (!from || !sizes) throw new Error(`openInputSize: ${n.name}: no converted sizes to turn into scales`);
    const [, , oh, ow] = Array.from(new BigInt64Array(sizes.raw.slice().buffer), Number);
    const scales = floatTensor(`${n.name}/open_scales`, [1, 1, oh! / from[0], ow! / from[1]]);
    if (!Number.isInteger(oh! / from[0]) || !Number.isInteger(ow! / from[1])) throw new Error(`openInputSize: ${n.name} does not scale by a whole factor`);
    initializers.push(scales);
    return { ...n, inputs: [n.inputs[0]!, n.inputs[1]!, scales.name] };
  });
  const stillUsed = new Set(nodes.flatMap((n) => n.inputs));
  const open = (shape: (number | string)[] | undefined, h: number, w: number) =>
    shape?.map((d, i) => (i === h ? OPEN_HEIGHT : i === w ? OPEN_WIDTH : d));
  return {
    ...model,
    nodes,
    initializers: initializers.filter((t) => stillUsed.has(t.name)), // the sizes, and the empty scales they came with
    inputs: model.inputs.map((v) => ({ ...v, shape: open(v.shape, 2, 3) })),
    outputs: model.outputs.map((v) => ({ ...v, shape: open(v.shape, 1, 2) })),
  };
}
