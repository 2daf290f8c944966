// The onnxruntime C++ API, set up for a library opened at run time: ORT_API_MANUAL_INIT stops the header from
// calling OrtGetApiBase() during static initialization (that symbol is only reachable through dlsym);
// LoadOnnxRuntime() calls Ort::InitApi() instead. Include this, never onnxruntime_cxx_api.h directly.
#pragma once

#if EDGECV_WITH_ONNXRUNTIME
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>
#undef ORT_API_MANUAL_INIT
#endif
