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
 * From this many entries the default beam doubles to LARGE_GALLERY_EXPANSION: a margin for the largest galleries,
 * where beam 64 agreed less often with exact search than at 100,000 (docs/performance.md, "Gallery at scale"). The
 * switch point between the two measured sizes is a judgement, not a measurement.
 */
export const LARGE_GALLERY = 500_000;
export const LARGE_GALLERY_EXPANSION = 128;
