#include "jobs/gallery_search_job.h"

#include "jobs/gallery_match_js.h"

namespace edgecv {

GallerySearchJob::GallerySearchJob(Napi::Env env, std::vector<float> query,
                                   std::shared_ptr<const GallerySnapshot> gallery)
    : Job(env), query_(std::move(query)), gallery_(std::move(gallery)) {}

void GallerySearchJob::Execute(WorkerContext&) {
  if (static_cast<int>(query_.size()) != gallery_->dim()) {
    throw JobError(ErrorCode::kInvalidArgument, "the query's length differs from the gallery's dimension");
  }
  const auto t0 = Clock::now();
  match_ = gallery_->Search(query_.data());
  searchMs_ = MillisBetween(t0, Clock::now());
}

Napi::Value GallerySearchJob::Result(Napi::Env env) {
  Napi::Object result = Napi::Object::New(env);
  result.Set("match", GalleryMatchToJs(env, match_));
  result.Set("searchMs", Napi::Number::New(env, searchMs_));
  return result;
}

}  // namespace edgecv
