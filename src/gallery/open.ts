// Opens the gallery store the configuration names and the recognition service over it.

import { createHash } from 'node:crypto';
import path from 'node:path';
import type { GalleryIndexOptions } from '../engine/gallery/gallery-index.js';
import { RecognitionService, type RecognitionEngine } from './recognition-service.js';
import { RedisGalleryStore } from './redis-store.js';
import { SqliteGalleryStore } from './sqlite-store.js';
import type { GalleryStore } from './types.js';

/** Where the gallery lives and how it is searched (the server maps its options onto these). */
export interface GalleryPlace {
  /** 'sqlite' (default: <dataDir>/gallery.db) or a redis:// URL. */
  gallery?: string;
  dataDir: string;
}

export interface RecognitionOpenOptions extends GalleryPlace {
  noStoreCrops?: boolean;
  galleryAnnThreshold?: number;
  galleryAnnQuantization?: 'f16' | 'i8';
  galleryAnnBeam?: number;
}

export async function openGalleryStore(config: GalleryPlace): Promise<GalleryStore> {
  const where = config.gallery ?? 'sqlite';
  return where === 'sqlite' ? SqliteGalleryStore.open(config.dataDir) : RedisGalleryStore.open(where);
}

/**
 * Where the HNSW graph is kept between restarts (GalleryIndexOptions.annFile): beside gallery.db, or for a Redis
 * fleet a local cache named after the Redis URL (checked row by row against Redis when loaded, see ann-file.ts).
 */
export function annFileFor(config: GalleryPlace): string {
  const where = config.gallery ?? 'sqlite';
  const name = where === 'sqlite' ? 'gallery.hnsw' : `gallery-redis-${createHash('sha256').update(where).digest('hex').slice(0, 12)}.hnsw`;
  return path.join(config.dataDir, name);
}

export async function openRecognition(engine: RecognitionEngine, config: RecognitionOpenOptions): Promise<RecognitionService> {
  const store = await openGalleryStore(config);
  const gallery: GalleryIndexOptions = { annFile: annFileFor(config) };
  if (config.galleryAnnThreshold !== undefined) gallery.annThreshold = config.galleryAnnThreshold;
  if (config.galleryAnnQuantization !== undefined) gallery.annQuantization = config.galleryAnnQuantization;
  if (config.galleryAnnBeam !== undefined) gallery.annExpansion = config.galleryAnnBeam;
  try {
    return await RecognitionService.open(engine, store, { storeCrops: !config.noStoreCrops, gallery });
  } catch (e) {
    await store.close();
    throw e;
  }
}
