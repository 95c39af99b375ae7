// RingReader: reads records of a BPF ring buffer map (libbpf ring_buffer) without blocking;
// consume() returns the records available now, each copied into a Buffer.
#include <bpf/libbpf.h>
#include <errno.h>

#include <string>
#include <vector>

#include "util.h"

namespace cellium_bpf {
namespace {

class RingReader : public Napi::ObjectWrap<RingReader> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "RingReader",
                       {InstanceMethod("consume", &RingReader::Consume), InstanceMethod("close", &RingReader::Close)});
  }

  // new RingReader(mapFd): the reader keeps its own reference to the map.
  explicit RingReader(const Napi::CallbackInfo &info) : Napi::ObjectWrap<RingReader>(info) {
    int fd = argInt(info, 0, "mapFd");
    rb_ = ring_buffer__new(fd, onSample, this, nullptr);
    if (!rb_) throwSys(info.Env(), errno, "ring_buffer__new");
  }

  ~RingReader() override {
    if (rb_) ring_buffer__free(rb_);
  }

 private:
  struct ring_buffer *rb_ = nullptr;
  std::vector<std::string> pending_;

  static int onSample(void *ctx, void *data, size_t size) {
    static_cast<RingReader *>(ctx)->pending_.emplace_back(static_cast<const char *>(data), size);
    return 0;
  }

  // consume() -> Buffer[]: every record available now (possibly none).
  Napi::Value Consume(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    if (!rb_) throwSys(env, EBADF, "ring_buffer__consume", "", "reader is closed");
    pending_.clear();
    int n = ring_buffer__consume(rb_);
    if (n < 0) throwSys(env, -n, "ring_buffer__consume");
    Napi::Array out = Napi::Array::New(env, pending_.size());
    for (size_t i = 0; i < pending_.size(); i++) {
      out.Set(i, Napi::Buffer<char>::Copy(env, pending_[i].data(), pending_[i].size()));
    }
    pending_.clear();
    return out;
  }

  Napi::Value Close(const Napi::CallbackInfo &info) {
    if (rb_) ring_buffer__free(rb_);
    rb_ = nullptr;
    return info.Env().Undefined();
  }
};

}  // namespace

void registerRingbuf(Napi::Env env, Napi::Object exports) { exports.Set("RingReader", RingReader::Define(env)); }

}  // namespace cellium_bpf
