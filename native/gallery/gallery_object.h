// JS handle of a GalleryIndex: `new Gallery(dim)` from createGallery(). Updates
// run synchronously on the JS thread (the index's single writer); searches run
// in jobs on the workers, each on the snapshot taken when it was submitted.
#pragma once

#include <napi.h>

#include <memory>

#include "gallery/gallery_index.h"

namespace edgecv {

class GalleryObject : public Napi::ObjectWrap<GalleryObject> {
 public:
  static Napi::Function Define(Napi::Env env);
  explicit GalleryObject(const Napi::CallbackInfo& info);

  const std::shared_ptr<GalleryIndex>& index() const { return index_; }

 private:
  // add(ids: Float64Array, subjects: string[], embeddings: Float32Array)
  Napi::Value Add(const Napi::CallbackInfo& info);
  // replace(ids, subjects, embeddings): the whole gallery at once
  Napi::Value Replace(const Napi::CallbackInfo& info);
  // remove(ids: Float64Array) -> number removed
  Napi::Value Remove(const Napi::CallbackInfo& info);
  // bestOf(ids: Float64Array, query: Float32Array) -> match | null (exact re-ranking of candidates)
  Napi::Value BestOf(const Napi::CallbackInfo& info);
  // size() -> { live, rows }
  Napi::Value Size(const Napi::CallbackInfo& info);
  Napi::Value Dim(const Napi::CallbackInfo& info);

  std::shared_ptr<GalleryIndex> index_;
};

}  // namespace edgecv
