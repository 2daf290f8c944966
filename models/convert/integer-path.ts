// Whether an int8 (QDQ) graph computes in integers from its input to its last quantized layer. onnxruntime's
// float kernels differ between CPU classes (AVX2, AVX-512 and ARM NEON add in other orders, a few units in the last
// place apart), and a float result that is then quantized moves across a rounding step now and then; the integer
// layers after it carry that step on, and an answer near a threshold flips with the CPU (docs/int8.md, "The same
// answers on every CPU"). Integer products are exact on every CPU, so a graph whose quantized tensors are made only
// from the input by operations that round once per element, and from integer layers, gives the same answers
// everywhere. Float layers after the last quantization (the heads a model keeps fp32) only carry their own
// last-place differences to the outputs.
import type { OnnxModel, OnnxNode } from './onnx-writer.js';

/**
 * Operators whose float result is the same on every CPU: one IEEE rounding per element, or none (a comparison, a
 * copy). A Relu or Clip after an integer convolution is part of it: onnxruntime fuses the pair.
 */
const EXACT_FLOAT_OPS = new Set(['Sub', 'Mul', 'Add', 'Div', 'Relu', 'Clip', 'MaxPool', 'Concat', 'Transpose', 'Reshape', 'Flatten', 'Squeeze', 'Unsqueeze', 'Identity', 'Slice', 'Pad']);
/** Of those, the arithmetic ones: exact only against a constant (the input's normalization), not between activations. */
const ELEMENTWISE = new Set(['Sub', 'Mul', 'Add', 'Div']);
/** Operators with a weight input (input 1): integer only where the weight is dequantized too. */
const WEIGHTED = new Set(['Conv', 'ConvTranspose', 'Gemm', 'MatMul']);

/**
 * The float operators whose results reach a QuantizeLinear other than through integer layers: onnxruntime runs them
 * with per-CPU kernels (a Conv, an activation) or as arithmetic between two activations. Empty for a graph whose
 * int8 answers are the same on every CPU. A node counts as an integer layer where each of its activation inputs is
 * a DequantizeLinear's output, and so is its weight (onnxruntime runs it as a QLinear kernel, or a bilinear Resize in
 * float on exactly dequantized values with code that has one path per architecture).
 */
export function floatBeforeQuantize(model: OnnxModel): OnnxNode[] {
  const constants = new Set(model.initializers.map((t) => t.name));
  const producers = new Map(model.nodes.flatMap((n) => n.outputs.map((o) => [o, n] as const)));
  const dequantized = new Set(model.nodes.filter((n) => n.opType === 'DequantizeLinear').map((n) => n.outputs[0]!));
  const activations = (n: OnnxNode) => n.inputs.filter((i) => i !== '' && !constants.has(i));
  const isIntegerLayer = (n: OnnxNode) =>
    activations(n).length > 0 && activations(n).every((i) => dequantized.has(i)) && (!WEIGHTED.has(n.opType) || dequantized.has(n.inputs[1]!));
  const found = new Map<string, OnnxNode>();
  const seen = new Set<string>();
  const visit = (tensor: string): void => {
    if (seen.has(tensor)) return;
    seen.add(tensor);
    const node = producers.get(tensor);
    if (!node || node.opType === 'DequantizeLinear' || node.opType === 'QuantizeLinear' || isIntegerLayer(node)) return;
    const exact = EXACT_FLOAT_OPS.has(node.opType) && (!ELEMENTWISE.has(node.opType) || activations(node).length <= 1);
    if (!exact) found.set(node.name, node);
    for (const input of activations(node)) visit(input);
  };
  for (const q of model.nodes) if (q.opType === 'QuantizeLinear') visit(q.inputs[0]!);
  return [...found.values()];
}

/**
 * Float operators on dequantized values that feed a quantization and compute new values: a bilinear (or cubic)
 * Resize. onnxruntime runs them with float weights in code that has one path per architecture: the same on every
 * x86 CPU, other roundings on ARM (measured in docs/int8.md, "The same answers on every CPU"). A model with one
 * gives its scored answers only on x64.
 */
export function floatOnDequantized(model: OnnxModel): OnnxNode[] {
  const dequantized = new Set(model.nodes.filter((n) => n.opType === 'DequantizeLinear').map((n) => n.outputs[0]!));
  const quantized = new Set(model.nodes.filter((n) => n.opType === 'QuantizeLinear').map((n) => n.inputs[0]!));
  return model.nodes.filter((n) => {
    const mode = n.attributes['mode'];
    const interpolates = n.opType === 'Resize' && mode?.kind === 'string' && mode.value !== 'nearest';
    return interpolates && dequantized.has(n.inputs[0]!) && n.outputs.some((o) => quantized.has(o));
  });
}
