// BpfObject: a BPF ELF object opened with libbpf (from a file or a Buffer), with its .rodata
// variables set by name before load (per-endpoint constants without recompiling), maps bound to
// pinned maps (pin path or an existing fd), then loaded; programs and maps by name afterwards.
// Closing the object closes its fds; attached programs stay attached through their links.
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sched.h>
#include <errno.h>
#include <string.h>

#include <vector>

#include "util.h"

namespace cellium_bpf {
namespace {

class BpfObject : public Napi::ObjectWrap<BpfObject> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "BpfObject",
                       {
                           InstanceMethod("variables", &BpfObject::Variables),
                           InstanceMethod("setVariable", &BpfObject::SetVariable),
                           InstanceMethod("maps", &BpfObject::Maps),
                           InstanceMethod("setMapPinPath", &BpfObject::SetMapPinPath),
                           InstanceMethod("reuseMapFd", &BpfObject::ReuseMapFd),
                           InstanceMethod("load", &BpfObject::Load),
                           InstanceMethod("loadAsync", &BpfObject::LoadAsync),
                           InstanceMethod("programs", &BpfObject::Programs),
                           InstanceMethod("programFd", &BpfObject::ProgramFd),
                           InstanceMethod("mapFd", &BpfObject::MapFd),
                           InstanceMethod("close", &BpfObject::Close),
                       });
  }

  // new BpfObject(pathOrBuffer, name?, pinRoot?)
  explicit BpfObject(const Napi::CallbackInfo &info) : Napi::ObjectWrap<BpfObject>(info) {
    Napi::Env env = info.Env();
    std::string name = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
    std::string pinRoot = info.Length() > 2 && info[2].IsString() ? info[2].As<Napi::String>().Utf8Value() : "";
    LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = name.empty() ? nullptr : name.c_str(),
                .pin_root_path = pinRoot.empty() ? nullptr : pinRoot.c_str());
    logCaptureStart();
    if (info.Length() > 0 && info[0].IsString()) {
      std::string path = info[0].As<Napi::String>().Utf8Value();
      obj_ = bpf_object__open_file(path.c_str(), &opts);
      if (!obj_) throwSys(env, errno, "bpf_object__open_file", path, logCaptureTake());
    } else {
      Bytes b = argBytes(info, 0, "source");
      elf_.assign(b.data, b.data + b.len);
      obj_ = bpf_object__open_mem(elf_.data(), elf_.size(), &opts);
      if (!obj_) throwSys(env, errno, "bpf_object__open_mem", name, logCaptureTake());
    }
    logCaptureTake();
  }

  ~BpfObject() override {
    if (obj_) bpf_object__close(obj_);
  }

 private:
  struct bpf_object *obj_ = nullptr;
  std::vector<uint8_t> elf_;
  bool loaded_ = false;

  // Set while loadAsync runs on a worker thread: the object is the worker's until it settles.
  bool busy_ = false;

  struct bpf_object *object(Napi::Env env) {
    if (!obj_) throwSys(env, EBADF, "bpf_object", "", "object is closed");
    if (busy_) throwSys(env, EBUSY, "bpf_object", "", "object is being loaded (loadAsync)");
    return obj_;
  }

  // Loads the object on a worker thread (the verifier and JIT run off the JS thread) and settles
  // the promise; the JS object is kept alive until then.
  class LoadWorker : public Napi::AsyncWorker {
   public:
    LoadWorker(Napi::Env env, BpfObject *self)
        : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), self_(self), name_(bpf_object__name(self->obj_)) {
      ref_ = Napi::Persistent(self->Value());
    }
    Napi::Promise Promise() { return deferred_.Promise(); }

   protected:
    void Execute() override {
      // The verifier is CPU-bound: as SCHED_BATCH it does not preempt the event loop's thread on
      // wakeup (it still gets its share of the CPU); the worker is put back to normal afterwards.
      struct sched_param param = {};
      bool batch = sched_setscheduler(0, SCHED_BATCH, &param) == 0;
      logCaptureStart();
      err_ = bpf_object__load(self_->obj_);
      log_ = logCaptureTake();
      if (batch) sched_setscheduler(0, SCHED_OTHER, &param);
    }
    void OnOK() override {
      self_->busy_ = false;
      if (err_) {
        deferred_.Reject(sysError(Env(), err_, "bpf_object__load", name_, log_).Value());
      } else {
        self_->loaded_ = true;
        deferred_.Resolve(Env().Undefined());
      }
      ref_.Reset();
    }

   private:
    Napi::Promise::Deferred deferred_;
    Napi::ObjectReference ref_;
    BpfObject *self_;
    std::string name_;
    std::string log_;
    int err_ = 0;
  };

  struct bpf_map *map(Napi::Env env, const std::string &name) {
    struct bpf_map *m = bpf_object__find_map_by_name(object(env), name.c_str());
    if (!m) throwSys(env, ENOENT, "bpf_object__find_map_by_name", "", "no map " + name);
    return m;
  }

  struct bpf_program *program(Napi::Env env, const std::string &name) {
    struct bpf_program *p = bpf_object__find_program_by_name(object(env), name.c_str());
    if (!p) throwSys(env, ENOENT, "bpf_object__find_program_by_name", "", "no program " + name);
    return p;
  }

  // The .rodata variable `name`: offset and size, or false when there is none.
  bool findVariable(Napi::Env env, const std::string &name, uint32_t &offset, uint32_t &size) {
    struct btf *btf = bpf_object__btf(object(env));
    if (!btf) return false;
    int id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
    if (id < 0) return false;
    const struct btf_type *sec = btf__type_by_id(btf, id);
    const struct btf_var_secinfo *vs = btf_var_secinfos(sec);
    for (int i = 0; i < btf_vlen(sec); i++, vs++) {
      const struct btf_type *var = btf__type_by_id(btf, vs->type);
      if (name == btf__name_by_offset(btf, var->name_off)) {
        offset = vs->offset;
        size = vs->size;
        return true;
      }
    }
    return false;
  }

  Napi::Value Variables(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    struct btf *btf = bpf_object__btf(object(env));
    int id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
    if (id < 0) return out;
    const struct btf_type *sec = btf__type_by_id(btf, id);
    const struct btf_var_secinfo *vs = btf_var_secinfos(sec);
    for (int i = 0; i < btf_vlen(sec); i++, vs++) {
      const struct btf_type *var = btf__type_by_id(btf, vs->type);
      Napi::Object o = Napi::Object::New(env);
      o.Set("name", btf__name_by_offset(btf, var->name_off));
      o.Set("offset", vs->offset);
      o.Set("size", vs->size);
      out.Set(out.Length(), o);
    }
    return out;
  }

  // setVariable(name, bytes): bytes must be exactly the variable's size.
  Napi::Value SetVariable(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    std::string name = argString(info, 0, "name");
    if (loaded_) throwSys(env, EBUSY, "setVariable", "", "object already loaded: .rodata is frozen");
    uint32_t offset = 0, size = 0;
    if (!findVariable(env, name, offset, size)) throwSys(env, ENOENT, "setVariable", "", "no .rodata variable " + name);
    Bytes b = argBytesSized(info, 1, "value", size);
    struct bpf_map *rodata = map(env, ".rodata");
    size_t total = 0;
    // libbpf < 1.3 returns const void *: the area is the writable mmap of .rodata until load.
    uint8_t *data = static_cast<uint8_t *>(const_cast<void *>(bpf_map__initial_value(rodata, &total)));
    if (!data || offset + size > total) throwSys(env, EINVAL, "bpf_map__initial_value", "", ".rodata not writable");
    memcpy(data + offset, b.data, size);
    return env.Undefined();
  }

  Napi::Value Maps(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    struct bpf_map *m;
    bpf_object__for_each_map(m, object(env)) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("name", bpf_map__name(m));
      o.Set("type", (uint32_t)bpf_map__type(m));
      o.Set("keySize", bpf_map__key_size(m));
      o.Set("valueSize", bpf_map__value_size(m));
      o.Set("maxEntries", bpf_map__max_entries(m));
      o.Set("flags", bpf_map__map_flags(m));
      const char *pin = bpf_map__pin_path(m);
      o.Set("pinPath", pin ? Napi::Value(Napi::String::New(env, pin)) : env.Null());
      o.Set("fd", loaded_ ? bpf_map__fd(m) : -1);
      out.Set(out.Length(), o);
    }
    return out;
  }

  // setMapPinPath(name, path|null): at load, reuse the map pinned there or create and pin it.
  Napi::Value SetMapPinPath(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    std::string name = argString(info, 0, "name");
    std::string path = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
    int err = bpf_map__set_pin_path(map(env, name), path.empty() ? nullptr : path.c_str());
    if (err) throwSys(env, err, "bpf_map__set_pin_path", path, name);
    return env.Undefined();
  }

  // reuseMapFd(name, fd): the object uses this existing map instead of creating one.
  Napi::Value ReuseMapFd(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    std::string name = argString(info, 0, "name");
    int fd = argInt(info, 1, "fd");
    int err = bpf_map__reuse_fd(map(env, name), fd);
    if (err) throwSys(env, err, "bpf_map__reuse_fd", "", name);
    return env.Undefined();
  }

  Napi::Value Load(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    logCaptureStart();
    int err = bpf_object__load(object(env));
    std::string log = logCaptureTake();
    if (err) throwSys(env, err, "bpf_object__load", bpf_object__name(obj_), log);
    loaded_ = true;
    return env.Undefined();
  }

  // loadAsync(): a Promise settled once the object is loaded on a worker thread (rejects like load throws).
  Napi::Value LoadAsync(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    object(env);
    if (loaded_) throwSys(env, EALREADY, "bpf_object__load", bpf_object__name(obj_), "object already loaded");
    auto *worker = new LoadWorker(env, this);
    Napi::Promise promise = worker->Promise();
    busy_ = true;
    worker->Queue();
    return promise;
  }

  Napi::Value Programs(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    struct bpf_program *p;
    bpf_object__for_each_program(p, object(env)) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("name", bpf_program__name(p));
      o.Set("section", bpf_program__section_name(p));
      o.Set("type", (uint32_t)bpf_program__type(p));
      o.Set("fd", loaded_ ? bpf_program__fd(p) : -1);
      out.Set(out.Length(), o);
    }
    return out;
  }

  Napi::Value ProgramFd(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    int fd = bpf_program__fd(program(env, argString(info, 0, "name")));
    if (fd < 0) throwSys(env, EBADF, "bpf_program__fd", "", "object not loaded");
    return Napi::Number::New(env, fd);
  }

  Napi::Value MapFd(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    int fd = bpf_map__fd(map(env, argString(info, 0, "name")));
    if (fd < 0) throwSys(env, EBADF, "bpf_map__fd", "", "object not loaded");
    return Napi::Number::New(env, fd);
  }

  Napi::Value Close(const Napi::CallbackInfo &info) {
    if (busy_) throwSys(info.Env(), EBUSY, "bpf_object__close", "", "object is being loaded (loadAsync)");
    if (obj_) bpf_object__close(obj_);
    obj_ = nullptr;
    return info.Env().Undefined();
  }
};

}  // namespace

void registerObject(Napi::Env env, Napi::Object exports) { exports.Set("BpfObject", BpfObject::Define(env)); }

}  // namespace cellium_bpf
