// Per-env state of the addon (napi_set_instance_data): the classes it defines.
#pragma once

#include <napi.h>

namespace edgecv {

struct AddonData {
  Napi::FunctionReference engineConstructor;
  Napi::FunctionReference galleryConstructor;
};

}  // namespace edgecv
