// Worker thread that measures face samples' quality (sample-quality.ts: a jpeg-js decode of the crop, a few ms
// each), so that a library page of crops never holds the server's event loop. It gets {id, crops} and posts back
// {id, qualities} in the same order.

import { parentPort } from 'node:worker_threads';
import { sampleQuality, type SampleQuality } from './sample-quality.js';
import type { Rect } from './types.js';

export interface QualityJob {
  id: number;
  crops: { crop: Uint8Array; rect: Rect }[];
}

export interface QualityReply {
  id: number;
  qualities: (SampleQuality | null)[];
}

parentPort?.on('message', (job: QualityJob) => {
  const reply: QualityReply = { id: job.id, qualities: job.crops.map((c) => sampleQuality(c.crop, c.rect)) };
  parentPort!.postMessage(reply);
});
