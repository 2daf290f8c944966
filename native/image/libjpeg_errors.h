// libjpeg's fatal errors turned into a longjmp back to the caller's setjmp: libjpeg's default error_exit ends the
// process, and error_exit must not return. The functions that call setjmp (native/image/jpeg_decoder.cc,
// jpeg_encoder.cc) hold only plain data, so the jump skips no destructor.
#pragma once

#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

namespace edgecv {

struct LibjpegErrors {
  jpeg_error_mgr pub;  // first: libjpeg sees only this, and OnLibjpegFatal casts back
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// error_exit: keeps libjpeg's message and jumps back to the setjmp on errors->jump.
[[noreturn]] inline void OnLibjpegFatal(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<LibjpegErrors*>(cinfo->err);
  cinfo->err->format_message(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

}  // namespace edgecv
