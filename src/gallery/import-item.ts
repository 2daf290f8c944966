// One line of a gallery import made into a sample to store: its embedding kept when it is the current model's,
// else computed again from its crop, or from its photo. A failure names the line (ImportError).

import type { FaceEmbedderInfo } from '../engine/face-embedding.js';
import { ImportError, type ImportItem } from './jsonl.js';
import { embeddingProblem } from './sample-check.js';
import type { NewSample, Rect } from './types.js';

export interface ImportContext {
  embedder: FaceEmbedderInfo;
  storeCrops: boolean;
  /** Enrols a photo as a sample (the enrolment checks included). */
  fromPhoto: (subject: string, image: Buffer) => Promise<NewSample>;
  /** The embedding of the face at `rect` in a stored crop; null when there is none. */
  embedCrop: (crop: Buffer, rect: Rect) => Promise<Float32Array | null>;
}

export async function sampleFromImportItem(item: ImportItem, ctx: ImportContext): Promise<NewSample> {
  const { model, version } = ctx.embedder;
  try {
    if ('image' in item) return await ctx.fromPhoto(item.subject, item.image);
    const createdAt = item.createdAt ?? Date.now();
    const crop = ctx.storeCrops ? item.crop : null;
    const cropRect = crop ? item.cropRect : null;
    if (item.embedding && item.model === model && item.modelVersion === version) {
      const problem = embeddingProblem(item.embedding, ctx.embedder.dim);
      if (problem !== null) throw new Error(`'embedding': ${problem}`);
      return { subject: item.subject, createdAt, model, modelVersion: version, embedding: item.embedding, crop, cropRect };
    }
    if (!item.crop || !item.cropRect) throw new Error(`the embedding is not from ${model} ${version} and there is no crop to compute it from`);
    const embedding = await ctx.embedCrop(item.crop, item.cropRect);
    if (!embedding) throw new Error('no embedding from the crop');
    return { subject: item.subject, createdAt, model, modelVersion: version, embedding, crop, cropRect };
  } catch (e) {
    if (e instanceof ImportError) throw e;
    throw new ImportError(item.line, (e as Error).message);
  }
}
