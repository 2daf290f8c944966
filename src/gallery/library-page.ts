// One page of a subject's samples for the face library (GET /trainer/samples/): at most `limit` samples, and at
// most PAGE_CROP_BYTES of crops (an imported crop may be large), each with its quality: the one kept with the
// sample, or, for a row an older edgecv wrote without one, measured now (sample-qualities.ts) and written back, so
// that it is measured once, not at every listing or restart. The work is bounded by the page.

import type { LibrarySample } from './recognition-types.js';
import type { CroppedSample, SampleQualities } from './sample-qualities.js';
import type { SampleQuality } from './sample-quality.js';
import type { GalleryStore, SamplePageRequest, StoredSample } from './types.js';

/** Samples a page holds unless the request asks otherwise, and the most it may ask for. */
export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;
/** Crop bytes past which a page ends early (always after at least one sample): about 11 MB of base64. */
export const PAGE_CROP_BYTES = 8 * 1024 * 1024;

export interface LibraryPage {
  samples: LibrarySample[];
  /** The subject's samples in the store now. */
  total: number;
  /** The `after` of the next page; null when this one reached the subject's last sample. */
  next: number | null;
}

export async function libraryPage(
  store: GalleryStore,
  qualities: SampleQualities,
  subject: string,
  request: SamplePageRequest,
): Promise<LibraryPage> {
  const page = await store.samplesOf(subject, request);
  let bytes = 0;
  let kept = page.samples.length;
  for (let i = 0; i < page.samples.length; i++) {
    bytes += page.samples[i]!.crop?.length ?? 0;
    if (bytes > PAGE_CROP_BYTES && i > 0) {
      kept = i;
      break;
    }
  }
  const samples = page.samples.slice(0, kept);
  const next = kept < page.samples.length ? samples[kept - 1]!.id : page.next;
  const missing = samples.filter((s): s is StoredSample & CroppedSample => s.quality === undefined && s.crop !== null && s.cropRect !== null);
  const measured = new Map<number, SampleQuality | null>();
  if (missing.length > 0) {
    (await qualities.of(missing)).forEach((q, i) => measured.set(missing[i]!.id, q));
    // Kept for the next listing, on any server; should this fail, the next listing measures them again.
    await store.setQualities([...measured].map(([id, quality]) => ({ id, quality }))).catch(() => {});
  }
  return {
    total: page.total,
    next,
    samples: samples.map((s) => ({
      id: s.id,
      createdAt: s.createdAt,
      crop: s.crop,
      cropRect: s.cropRect,
      quality: measured.get(s.id) ?? s.quality ?? null,
    })),
  };
}
