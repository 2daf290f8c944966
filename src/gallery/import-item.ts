// One line of a gallery import made into a sample to store: its embedding kept when it is the current model's,
// else computed again from its crop, or from its photo. A crop is checked (import-crop.ts): one larger than
// enrolment keeps is cut again from itself, as enrolment cuts a photo. A crop kept as sent keeps the line's quality
// (as export wrote it); any other crop's is measured before the store write. A failure names the line (ImportError).

import type { FaceEmbedderInfo, FaceEmbeddingResult } from '../engine/face-embedding.js';
import { checkImportCrop, STORED_CROP_MAX_BYTES, STORED_CROP_MAX_SIDE } from './import-crop.js';
import { ImportError, type ImportItem } from './jsonl.js';
import { embeddingProblem } from './sample-check.js';
import type { NewSample, Rect } from './types.js';

export interface ImportContext {
  embedder: FaceEmbedderInfo;
  storeCrops: boolean;
  /** Enrols a photo as a sample (the enrolment checks included). */
  fromPhoto: (subject: string, image: Buffer) => Promise<NewSample>;
  /** The embedding of the face at `rect` in a stored crop, and with keepCrop a crop cut from it as enrolment does. */
  embedCrop: (crop: Buffer, rect: Rect, keepCrop: boolean) => Promise<Pick<FaceEmbeddingResult, 'embedding' | 'crop'>>;
}

export async function sampleFromImportItem(item: ImportItem, ctx: ImportContext): Promise<NewSample> {
  const { model, version } = ctx.embedder;
  try {
    if ('image' in item) return await ctx.fromPhoto(item.subject, item.image);
    const createdAt = item.createdAt ?? Date.now();
    let crop = ctx.storeCrops ? item.crop : null;
    let cropRect = crop ? item.cropRect : null;
    let quality = crop ? item.quality : null; // undefined: measured (RecognitionService.import)
    let embedding = item.embedding && item.model === model && item.modelVersion === version ? item.embedding : null;
    if (embedding) {
      const problem = embeddingProblem(embedding, ctx.embedder.dim);
      if (problem !== null) throw new Error(`'embedding': ${problem}`);
    }
    const fit = item.crop && item.cropRect ? checkImportCrop(item.crop, item.cropRect) : null;
    if (!embedding || (crop && fit === 'too large')) {
      if (!item.crop || !item.cropRect) throw new Error(`the embedding is not from ${model} ${version} and there is no crop to compute it from`);
      const cut = await ctx.embedCrop(item.crop, item.cropRect, crop !== null);
      if (!cut.embedding) throw new Error('no embedding from the crop');
      embedding ??= cut.embedding;
      if (crop && fit === 'too large') {
        if (!cut.crop) throw new Error(`'crop' is over ${STORED_CROP_MAX_SIDE} px or ${STORED_CROP_MAX_BYTES} bytes and could not be cut again`);
        crop = cut.crop.jpeg;
        cropRect = cut.crop.rect;
        quality = undefined; // another crop
      }
    }
    return {
      subject: item.subject,
      createdAt,
      model,
      modelVersion: version,
      embedding,
      crop,
      cropRect,
      ...(quality === undefined ? {} : { quality }),
    };
  } catch (e) {
    if (e instanceof ImportError) throw e;
    throw new ImportError(item.line, (e as Error).message);
  }
}
