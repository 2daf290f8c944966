// The approximate (HNSW) index's defaults, apart from the index itself so that the server's options and --help
// can name them without loading usearch.

/** Enrolled samples from which recognition searches the HNSW index instead of every embedding. */
export const DEFAULT_ANN_THRESHOLD = 2_000;

/**
 * Default beam width of a search (GalleryIndexOptions.annExpansion). 64 rather than wider: a face the first beam
 * misses comes back as a would-be rejection, which the confirming scan (scanCandidates) catches.
 */
export const DEFAULT_EXPANSION_SEARCH = 64;

/**
 * From this many entries the default beam doubles to LARGE_GALLERY_EXPANSION. Measured on real embeddings with
 * distractors (docs/performance.md, Gallery at scale): at 100,000 beam 64 gives the exact search's top-1 for every
 * real query; at 1,000,000 it gave 98.4 to 98.7%, beam 128 99.56%. The switch point between the two measured sizes
 * is a judgement, not a measurement.
 */
export const LARGE_GALLERY = 500_000;
export const LARGE_GALLERY_EXPANSION = 128;
