// The enrolled embeddings, searched with one matrix product.
//
// Readers (jobs on worker threads) take an immutable GallerySnapshot and search
// it without any lock. The single writer (the JS thread) builds the next
// snapshot off to the side and publishes it by swapping a shared_ptr under a
// mutex, so an update never blocks a search and no search ever sees a
// half-built gallery.
//
// Cost of updates: rows live in a buffer with spare capacity that snapshots
// share. Appending writes rows past the end every existing snapshot can see, so
// an add is O(rows added), not a copy of the gallery. Removing marks rows dead
// in the new snapshot's own label vector (O(rows) of ints, no embedding copied);
// dead rows are compacted away when the buffer is next reallocated or when they
// outnumber the live ones.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <opencv2/core.hpp>

namespace edgecv {

struct GalleryMatch {
  bool found = false;  // false when the gallery is empty
  int64_t id = 0;      // the sample's id
  std::string subject;
  float cosine = 0;  // in [-1, 1]; 1 = same direction
};

// One sample to add. `embedding` points to `dim` floats, L2-normalized by the caller.
struct GallerySampleRef {
  int64_t id;
  const std::string* subject;
  const float* embedding;
};

// Row storage shared by successive snapshots; only the writer appends to it.
struct EmbeddingBuffer {
  cv::Mat rows;  // capacity x dim, CV_32F
  int used = 0;  // rows written so far (writer side)
};

class GallerySnapshot {
 public:
  GallerySnapshot(int dim) : dim_(dim) {}

  // Nearest live sample to `query` (dim floats, L2-normalized): one gemm of the
  // rows x dim matrix with the query, then the best live row.
  GalleryMatch Search(const float* query) const;

  int dim() const { return dim_; }
  size_t live() const { return live_; }
  size_t rows() const { return ids_.size(); }

 private:
  friend class GalleryIndex;
  int dim_;
  std::shared_ptr<EmbeddingBuffer> buffer_;
  std::vector<int64_t> ids_;        // per row
  std::vector<int32_t> subjectOf_;  // per row: index into subjects_, -1 = removed
  std::shared_ptr<const std::vector<std::string>> subjects_;
  size_t live_ = 0;
};

class GalleryIndex {
 public:
  explicit GalleryIndex(int dim);

  // Any thread. The current snapshot; never null.
  std::shared_ptr<const GallerySnapshot> Snapshot() const;

  // Writer (JS thread) only. Ids already present are replaced by the new row.
  void Add(const std::vector<GallerySampleRef>& samples);
  // Writer only. Returns how many of `ids` were present.
  size_t Remove(const std::vector<int64_t>& ids);
  // Writer only. Builds a fresh gallery from `samples` and swaps it in at once.
  void Replace(const std::vector<GallerySampleRef>& samples);

  // Writer (JS thread) only. The nearest of the listed ids to `query`, with an
  // exact cosine: re-ranks an approximate index's candidates. Ids not present
  // are skipped; not found when none is.
  GalleryMatch BestOf(const std::vector<int64_t>& ids, const float* query) const;

  int dim() const { return dim_; }

 private:
  // A new snapshot with the live rows of `from` plus room for `extra` more, in
  // a freshly allocated buffer (the compaction path).
  std::shared_ptr<GallerySnapshot> Compacted(const GallerySnapshot& from, size_t extra) const;
  void Append(GallerySnapshot& next, const std::vector<GallerySampleRef>& samples);
  void Publish(std::shared_ptr<const GallerySnapshot> next);

  const int dim_;
  mutable std::mutex mutex_;  // guards current_ (the pointer, not the snapshot: that is immutable)
  std::shared_ptr<const GallerySnapshot> current_;
  // Writer-side lookups, kept in step with current_.
  std::unordered_map<int64_t, size_t> rowOfId_;
  std::unordered_map<std::string, int32_t> subjectIndex_;
};

}  // namespace edgecv
