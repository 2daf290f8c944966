// searchGallery(): the nearest enrolled sample to a given embedding, on a worker
// (the gallery search alone, as the benchmark times it).
#pragma once

#include <napi.h>

#include <memory>
#include <vector>

#include "gallery/gallery_index.h"
#include "pool/job.h"

namespace edgecv {

class GallerySearchJob : public Job {
 public:
  GallerySearchJob(Napi::Env env, std::vector<float> query, std::shared_ptr<const GallerySnapshot> gallery);

  void Execute(WorkerContext& ctx) override;
  Napi::Value Result(Napi::Env env) override;

 private:
  std::vector<float> query_;
  std::shared_ptr<const GallerySnapshot> gallery_;
  GalleryMatch match_;
  double searchMs_ = 0;
};

}  // namespace edgecv
