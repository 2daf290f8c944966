#include "gallery/gallery_index.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace edgecv {
namespace {

// Spare rows allocated with a new buffer: appends fit without a copy until it fills.
size_t CapacityFor(size_t needed) { return needed + std::max<size_t>(64, needed / 4); }

// Dead rows tolerated before a removal compacts the buffer: they cost search
// time (they still go through the gemm) but compacting copies the whole gallery.
bool TooManyDead(size_t rows, size_t live) {
  const size_t dead = rows - live;
  return dead >= 1024 && dead > live;
}

}  // namespace

GalleryMatch GallerySnapshot::Search(const float* query) const {
  GalleryMatch best;
  if (live_ == 0) return best;
  const int n = static_cast<int>(ids_.size());
  const cv::Mat matrix = buffer_->rows.rowRange(0, n);
  const cv::Mat q(1, dim_, CV_32F, const_cast<float*>(query));  // read only
  cv::Mat scores;  // n x 1: cosine of every row, as both sides are unit vectors
  cv::gemm(matrix, q, 1.0, cv::noArray(), 0.0, scores, cv::GEMM_2_T);
  const float* s = scores.ptr<float>();
  int bestRow = -1;
  for (int r = 0; r < n; ++r) {
    // Strictly greater: on a tie the earliest row wins, so the answer is deterministic.
    if (subjectOf_[r] >= 0 && (bestRow < 0 || s[r] > s[bestRow])) bestRow = r;
  }
  best.found = true;
  best.id = ids_[bestRow];
  best.subject = (*subjects_)[subjectOf_[bestRow]];
  best.cosine = s[bestRow];
  return best;
}

GalleryMatch GalleryIndex::BestOf(const std::vector<int64_t>& ids, const float* query) const {
  GalleryMatch best;
  const auto snapshot = Snapshot();
  for (int64_t id : ids) {
    const auto it = rowOfId_.find(id);
    if (it == rowOfId_.end()) continue;
    const int r = static_cast<int>(it->second);
    if (snapshot->subjectOf_[r] < 0) continue;
    const float* row = snapshot->buffer_->rows.ptr<float>(r);
    float dot = 0;
    for (int i = 0; i < dim_; ++i) dot += row[i] * query[i];
    // Ties keep the earlier candidate (the index's own order).
    if (!best.found || dot > best.cosine) {
      best.found = true;
      best.id = id;
      best.subject = (*snapshot->subjects_)[snapshot->subjectOf_[r]];
      best.cosine = dot;
    }
  }
  return best;
}

GalleryIndex::GalleryIndex(int dim) : dim_(dim) {
  if (dim <= 0) throw std::invalid_argument("gallery dimension must be positive");
  auto empty = std::make_shared<GallerySnapshot>(dim);
  empty->subjects_ = std::make_shared<const std::vector<std::string>>();
  current_ = std::move(empty);
}

std::shared_ptr<const GallerySnapshot> GalleryIndex::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

void GalleryIndex::Publish(std::shared_ptr<const GallerySnapshot> next) {
  std::lock_guard<std::mutex> lock(mutex_);
  current_.swap(next);
  // The old snapshot is released here or by the last job still searching it.
}

std::shared_ptr<GallerySnapshot> GalleryIndex::Compacted(const GallerySnapshot& from, size_t extra) const {
  auto next = std::make_shared<GallerySnapshot>(dim_);
  next->subjects_ = from.subjects_;
  next->buffer_ = std::make_shared<EmbeddingBuffer>();
  next->buffer_->rows.create(static_cast<int>(CapacityFor(from.live_ + extra)), dim_, CV_32F);
  next->ids_.reserve(from.live_ + extra);
  next->subjectOf_.reserve(from.live_ + extra);
  for (size_t r = 0; r < from.ids_.size(); ++r) {
    if (from.subjectOf_[r] < 0) continue;
    const int to = static_cast<int>(next->ids_.size());
    from.buffer_->rows.row(static_cast<int>(r)).copyTo(next->buffer_->rows.row(to));
    next->ids_.push_back(from.ids_[r]);
    next->subjectOf_.push_back(from.subjectOf_[r]);
  }
  next->buffer_->used = static_cast<int>(next->ids_.size());
  next->live_ = next->ids_.size();
  return next;
}

void GalleryIndex::Append(GallerySnapshot& next, const std::vector<GallerySampleRef>& samples) {
  // New subjects extend a copy of the name table; existing snapshots keep theirs.
  std::shared_ptr<std::vector<std::string>> names;
  for (const GallerySampleRef& s : samples) {
    auto found = subjectIndex_.find(*s.subject);
    int32_t subject;
    if (found != subjectIndex_.end()) {
      subject = found->second;
    } else {
      if (!names) names = std::make_shared<std::vector<std::string>>(*next.subjects_);
      subject = static_cast<int32_t>(names->size());
      names->push_back(*s.subject);
      subjectIndex_.emplace(*s.subject, subject);
    }
    const int row = next.buffer_->used++;
    std::memcpy(next.buffer_->rows.ptr<float>(row), s.embedding, sizeof(float) * dim_);
    next.ids_.push_back(s.id);
    next.subjectOf_.push_back(subject);
    ++next.live_;
  }
  if (names) next.subjects_ = std::move(names);
}

void GalleryIndex::Add(const std::vector<GallerySampleRef>& samples) {
  if (samples.empty()) return;
  const std::shared_ptr<const GallerySnapshot> current = Snapshot();
  auto next = std::make_shared<GallerySnapshot>(*current);  // copies the labels, shares the rows

  // A re-used id replaces its row (within the batch too: the last one wins).
  std::unordered_map<int64_t, size_t> batchLast;
  for (size_t i = 0; i < samples.size(); ++i) batchLast[samples[i].id] = i;
  std::vector<GallerySampleRef> fresh;
  fresh.reserve(batchLast.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    if (batchLast[samples[i].id] != i) continue;
    fresh.push_back(samples[i]);
    auto found = rowOfId_.find(samples[i].id);
    if (found != rowOfId_.end()) {
      next->subjectOf_[found->second] = -1;
      --next->live_;
    }
  }

  const bool shareBuffer = next->buffer_ && next->buffer_->used == static_cast<int>(next->ids_.size()) &&
                           next->ids_.size() + fresh.size() <= static_cast<size_t>(next->buffer_->rows.rows);
  const size_t firstNew = shareBuffer ? next->ids_.size() : 0;
  if (!shareBuffer) {
    next = Compacted(*next, fresh.size());
    rowOfId_.clear();  // rows moved: every id is re-indexed below
  }
  Append(*next, fresh);
  for (size_t r = firstNew; r < next->ids_.size(); ++r) {
    if (next->subjectOf_[r] >= 0) rowOfId_[next->ids_[r]] = r;
  }
  Publish(std::move(next));
}

size_t GalleryIndex::Remove(const std::vector<int64_t>& ids) {
  const std::shared_ptr<const GallerySnapshot> current = Snapshot();
  auto next = std::make_shared<GallerySnapshot>(*current);
  size_t removed = 0;
  for (int64_t id : ids) {
    auto found = rowOfId_.find(id);
    if (found == rowOfId_.end()) continue;
    next->subjectOf_[found->second] = -1;
    --next->live_;
    rowOfId_.erase(found);
    ++removed;
  }
  if (removed == 0) return 0;
  if (TooManyDead(next->ids_.size(), next->live_)) {
    next = Compacted(*next, 0);
    rowOfId_.clear();
    for (size_t r = 0; r < next->ids_.size(); ++r) rowOfId_[next->ids_[r]] = r;
  }
  Publish(std::move(next));
  return removed;
}

void GalleryIndex::Replace(const std::vector<GallerySampleRef>& samples) {
  GallerySnapshot empty(dim_);
  empty.subjects_ = std::make_shared<const std::vector<std::string>>();
  subjectIndex_.clear();
  std::unordered_map<int64_t, size_t> batchLast;
  for (size_t i = 0; i < samples.size(); ++i) batchLast[samples[i].id] = i;
  std::vector<GallerySampleRef> fresh;
  fresh.reserve(batchLast.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    if (batchLast[samples[i].id] == i) fresh.push_back(samples[i]);
  }
  std::shared_ptr<GallerySnapshot> next = Compacted(empty, fresh.size());
  Append(*next, fresh);
  rowOfId_.clear();
  for (size_t r = 0; r < next->ids_.size(); ++r) rowOfId_[next->ids_[r]] = r;
  Publish(std::move(next));
}

}  // namespace edgecv
