// CodeProject.AI's timing fields, added to the DeepStack answers of the routes that run a model (CodeProject.AI
// Server answers them on its DeepStack-compatible routes, and clients written for it read them):
//   inferenceMs: milliseconds in the models (detection and embedding inference), an integer
//   processMs:   milliseconds from the handler starting on the request (form read) to the answer, an integer
// Added beside DeepStack's own fields; nothing DeepStack answers is removed or changed.

/** Model milliseconds of one run's stage timings (DetectionTimings or FaceEmbeddingResult's timings). */
export function modelMs(timings: object): number {
  const t = timings as Partial<Record<'inferenceMs' | 'detectMs' | 'embedInferenceMs', number>>;
  return (t.inferenceMs ?? 0) + (t.detectMs ?? 0) + (t.embedInferenceMs ?? 0);
}

/** The two fields, for the answer of a request whose handler began at `t0` (performance.now()). */
export function codeProjectTimes(t0: number, inferenceMs: number): { inferenceMs: number; processMs: number } {
  return { inferenceMs: Math.round(inferenceMs), processMs: Math.round(performance.now() - t0) };
}
