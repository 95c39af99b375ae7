// Map operations on file descriptors: create, open pinned, pin, info, lookup/update/delete,
// key iteration and the BPF_MAP_*_BATCH commands. Keys and values are Buffers the caller sizes
// (the TypeScript layer checks them against the map's key and value sizes). All calls are
// synchronous (each is one bpf() syscall) except mapUpdateAsync/mapDeleteAsync/mapUpdateBatchAsync:
// an update or delete of a map-of-maps slot waits in the kernel for an RCU grace period
// (milliseconds; a batch update of many slots waits once), so those run on a libuv worker and
// settle a promise.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <vector>

#include "util.h"

namespace cellium_bpf {
namespace {

Napi::Value MapCreate(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  uint32_t type = argU32(info, 0, "type");
  std::string name = argString(info, 1, "name");
  uint32_t keySize = argU32(info, 2, "keySize");
  uint32_t valueSize = argU32(info, 3, "valueSize");
  uint32_t maxEntries = argU32(info, 4, "maxEntries");
  uint32_t flags = info.Length() > 5 ? argU32(info, 5, "flags") : 0;
  // an array or hash of maps needs an inner map to take its shape from (the 7th argument)
  int innerFd = info.Length() > 6 ? argInt(info, 6, "innerMapFd") : -1;
  LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
  if (innerFd >= 0) opts.inner_map_fd = innerFd;
  std::string kname = name.substr(0, 15);
  int fd = bpf_map_create((enum bpf_map_type)type, kname.c_str(), keySize, valueSize, maxEntries, &opts);
  if (fd < 0) throwSys(env, errno, "bpf_map_create", "", name);
  return Napi::Number::New(env, fd);
}

Napi::Value ObjGet(const Napi::CallbackInfo &info) {
  std::string path = argString(info, 0, "path");
  int fd = bpf_obj_get(path.c_str());
  if (fd < 0) throwSys(info.Env(), errno, "bpf_obj_get", path);
  return Napi::Number::New(info.Env(), fd);
}

Napi::Value ObjPin(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  std::string path = argString(info, 1, "path");
  if (bpf_obj_pin(fd, path.c_str()) < 0) throwSys(info.Env(), errno, "bpf_obj_pin", path);
  return info.Env().Undefined();
}

Napi::Value Close(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  if (fd >= 0) close(fd);
  return info.Env().Undefined();
}

Napi::Value MapInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int fd = argInt(info, 0, "fd");
  struct bpf_map_info mi;
  memset(&mi, 0, sizeof mi);
  __u32 len = sizeof mi;
  if (bpf_obj_get_info_by_fd(fd, &mi, &len) < 0) throwSys(env, errno, "bpf_obj_get_info_by_fd");
  Napi::Object o = Napi::Object::New(env);
  o.Set("type", mi.type);
  o.Set("id", mi.id);
  o.Set("keySize", mi.key_size);
  o.Set("valueSize", mi.value_size);
  o.Set("maxEntries", mi.max_entries);
  o.Set("flags", mi.map_flags);
  o.Set("name", std::string(mi.name, strnlen(mi.name, sizeof mi.name)));
  return o;
}

// lookup(fd, key, valueOut) -> true when found (valueOut filled), false when absent.
Napi::Value MapLookup(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  Bytes key = argBytes(info, 1, "key");
  Bytes value = argBytes(info, 2, "value");
  if (bpf_map_lookup_elem(fd, key.data, value.data) < 0) {
    if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
    throwSys(info.Env(), errno, "bpf_map_lookup_elem");
  }
  return Napi::Boolean::New(info.Env(), true);
}

Napi::Value MapUpdate(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  Bytes key = argBytes(info, 1, "key");
  Bytes value = argBytes(info, 2, "value");
  uint32_t flags = info.Length() > 3 ? argU32(info, 3, "flags") : 0;
  if (bpf_map_update_elem(fd, key.data, value.data, flags) < 0) throwSys(info.Env(), errno, "bpf_map_update_elem");
  return info.Env().Undefined();
}

// delete(fd, key) -> true when deleted, false when absent.
Napi::Value MapDelete(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  Bytes key = argBytes(info, 1, "key");
  if (bpf_map_delete_elem(fd, key.data) < 0) {
    if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
    throwSys(info.Env(), errno, "bpf_map_delete_elem");
  }
  return Napi::Boolean::New(info.Env(), true);
}

// The arguments of updateBatch and updateBatchAsync: (fd, keys, values, count, elemFlags?).
struct BatchArgs {
  int fd;
  Bytes keys, values;
  uint32_t count, flags;
};

BatchArgs batchArgs(const Napi::CallbackInfo &info) {
  return {argInt(info, 0, "fd"), argBytes(info, 1, "keys"), argBytes(info, 2, "values"), argU32(info, 3, "count"),
          info.Length() > 4 ? argU32(info, 4, "flags") : 0};
}

// One map update, delete or batch update on a libuv worker (keys and values copied), settling a
// promise: resolved with true (done) or false (delete of an absent key), rejected like the
// synchronous calls throw. A batch (count > 0) updates `count` concatenated keys and values.
class MapCall : public Napi::AsyncWorker {
 public:
  static Napi::Value Start(Napi::Env env, int fd, Bytes key, Bytes value, uint32_t flags, bool del, uint32_t count = 0) {
    auto *w = new MapCall(env, fd, key, value, flags, del, count);
    Napi::Promise p = w->deferred_.Promise();
    w->Queue();
    return p;
  }

 protected:
  void Execute() override {
    int r;
    if (count_ > 0) {
      __u32 n = count_;
      LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = flags_);
      r = bpf_map_update_batch(fd_, key_.data(), value_.data(), &n, &opts);
      done_ = n;
    } else {
      r = del_ ? bpf_map_delete_elem(fd_, key_.data()) : bpf_map_update_elem(fd_, key_.data(), value_.data(), flags_);
    }
    err_ = r < 0 ? errno : 0;
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (err_ == 0) return deferred_.Resolve(Napi::Boolean::New(env, true));
    if (del_ && err_ == ENOENT) return deferred_.Resolve(Napi::Boolean::New(env, false));
    if (count_ > 0) {
      return deferred_.Reject(sysError(env, err_, "bpf_map_update_batch", "", std::to_string(done_) + " written before the failure").Value());
    }
    deferred_.Reject(sysError(env, err_, del_ ? "bpf_map_delete_elem" : "bpf_map_update_elem").Value());
  }

 private:
  MapCall(Napi::Env env, int fd, Bytes key, Bytes value, uint32_t flags, bool del, uint32_t count)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), fd_(fd), key_(key.data, key.data + key.len),
        value_(value.data, value.data + value.len), flags_(flags), del_(del), count_(count) {}
  Napi::Promise::Deferred deferred_;
  int fd_;
  std::vector<uint8_t> key_, value_;
  uint32_t flags_;
  bool del_;
  uint32_t count_;
  uint32_t done_ = 0;
  int err_ = 0;
};

// mapUpdateAsync(fd, key, value, flags) -> Promise<true>, on a worker thread.
Napi::Value MapUpdateAsync(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  Bytes key = argBytes(info, 1, "key");
  Bytes value = argBytes(info, 2, "value");
  uint32_t flags = info.Length() > 3 ? argU32(info, 3, "flags") : 0;
  return MapCall::Start(info.Env(), fd, key, value, flags, false);
}

// mapDeleteAsync(fd, key) -> Promise<boolean> (false when absent), on a worker thread.
Napi::Value MapDeleteAsync(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  Bytes key = argBytes(info, 1, "key");
  return MapCall::Start(info.Env(), fd, key, Bytes{nullptr, 0}, 0, true);
}

// mapUpdateBatchAsync(fd, keys, values, count, elemFlags) -> Promise<true>: BPF_MAP_UPDATE_BATCH on a
// worker thread (for map-of-maps slots: one grace period for the whole batch).
Napi::Value MapUpdateBatchAsync(const Napi::CallbackInfo &info) {
  BatchArgs b = batchArgs(info);
  if (b.count == 0) throwArg(info.Env(), "count must be at least 1");
  return MapCall::Start(info.Env(), b.fd, b.keys, b.values, b.flags, false, b.count);
}

// nextKey(fd, key|null, nextOut) -> true when nextOut holds the next key, false at the end.
Napi::Value MapNextKey(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  Bytes key = argBytesOrNull(info, 1, "key");
  Bytes next = argBytes(info, 2, "next");
  if (bpf_map_get_next_key(fd, key.data, next.data) < 0) {
    if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
    throwSys(info.Env(), errno, "bpf_map_get_next_key");
  }
  return Napi::Boolean::New(info.Env(), true);
}

// lookupBatch(fd, inBatch|null, outBatch, keys, values, count) -> [n, more]: n entries were
// written to keys/values; when more is true, call again with inBatch = outBatch.
Napi::Value MapLookupBatch(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int fd = argInt(info, 0, "fd");
  Bytes in = argBytesOrNull(info, 1, "inBatch");
  Bytes out = argBytes(info, 2, "outBatch");
  Bytes keys = argBytes(info, 3, "keys");
  Bytes values = argBytes(info, 4, "values");
  __u32 count = argU32(info, 5, "count");
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  bool more = true;
  if (bpf_map_lookup_batch(fd, in.data, out.data, keys.data, values.data, &count, &opts) < 0) {
    if (errno != ENOENT) throwSys(env, errno, "bpf_map_lookup_batch");
    more = false;
  }
  Napi::Array r = Napi::Array::New(env, 2);
  r.Set(0u, Napi::Number::New(env, count));
  r.Set(1u, Napi::Boolean::New(env, more));
  return r;
}

// updateBatch(fd, keys, values, count, elemFlags) -> count written.
Napi::Value MapUpdateBatch(const Napi::CallbackInfo &info) {
  BatchArgs b = batchArgs(info);
  __u32 count = b.count;
  LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = b.flags);
  if (bpf_map_update_batch(b.fd, b.keys.data, b.values.data, &count, &opts) < 0) {
    throwSys(info.Env(), errno, "bpf_map_update_batch", "", std::to_string(count) + " written before the failure");
  }
  return Napi::Number::New(info.Env(), count);
}

// deleteBatch(fd, keys, count) -> count deleted (stops at the first absent key: ENOENT).
Napi::Value MapDeleteBatch(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  Bytes keys = argBytes(info, 1, "keys");
  __u32 count = argU32(info, 2, "count");
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  if (bpf_map_delete_batch(fd, keys.data, &count, &opts) < 0) {
    throwSys(info.Env(), errno, "bpf_map_delete_batch", "", std::to_string(count) + " deleted before the failure");
  }
  return Napi::Number::New(info.Env(), count);
}

// deleteKeys(fd, keys, count) -> count deleted: every key of the list, absent ones skipped (a
// BPF_MAP_DELETE_BATCH stops at the first absent key; the batch resumes after it). For garbage
// collection, where the datapath may have removed (LRU-evicted) an entry since it was read.
Napi::Value MapDeleteKeys(const Napi::CallbackInfo &info) {
  int fd = argInt(info, 0, "fd");
  Bytes keys = argBytes(info, 1, "keys");
  __u32 count = argU32(info, 2, "count");
  struct bpf_map_info mi;
  memset(&mi, 0, sizeof mi);
  __u32 len = sizeof mi;
  if (bpf_obj_get_info_by_fd(fd, &mi, &len) < 0) throwSys(info.Env(), errno, "bpf_obj_get_info_by_fd");
  if ((size_t)mi.key_size * count > keys.len) throwArg(info.Env(), "keys is shorter than count keys");
  __u32 done = 0, deleted = 0;
  while (done < count) {
    __u32 n = count - done;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    int rc = bpf_map_delete_batch(fd, keys.data + (size_t)done * mi.key_size, &n, &opts);
    deleted += n;
    done += n;
    if (rc == 0) break;
    if (errno != ENOENT) throwSys(info.Env(), errno, "bpf_map_delete_batch", "", std::to_string(deleted) + " deleted before the failure");
    done++;  // the absent key
  }
  return Napi::Number::New(info.Env(), deleted);
}

Napi::Value NumPossibleCpus(const Napi::CallbackInfo &info) {
  int n = libbpf_num_possible_cpus();
  if (n < 0) throwSys(info.Env(), -n, "libbpf_num_possible_cpus");
  return Napi::Number::New(info.Env(), n);
}

}  // namespace

void registerMaps(Napi::Env env, Napi::Object exports) {
  exports.Set("mapCreate", Napi::Function::New(env, MapCreate, "mapCreate"));
  exports.Set("objGet", Napi::Function::New(env, ObjGet, "objGet"));
  exports.Set("objPin", Napi::Function::New(env, ObjPin, "objPin"));
  exports.Set("close", Napi::Function::New(env, Close, "close"));
  exports.Set("mapInfo", Napi::Function::New(env, MapInfo, "mapInfo"));
  exports.Set("mapLookup", Napi::Function::New(env, MapLookup, "mapLookup"));
  exports.Set("mapUpdate", Napi::Function::New(env, MapUpdate, "mapUpdate"));
  exports.Set("mapDelete", Napi::Function::New(env, MapDelete, "mapDelete"));
  exports.Set("mapUpdateAsync", Napi::Function::New(env, MapUpdateAsync, "mapUpdateAsync"));
  exports.Set("mapDeleteAsync", Napi::Function::New(env, MapDeleteAsync, "mapDeleteAsync"));
  exports.Set("mapUpdateBatchAsync", Napi::Function::New(env, MapUpdateBatchAsync, "mapUpdateBatchAsync"));
  exports.Set("mapNextKey", Napi::Function::New(env, MapNextKey, "mapNextKey"));
  exports.Set("mapLookupBatch", Napi::Function::New(env, MapLookupBatch, "mapLookupBatch"));
  exports.Set("mapUpdateBatch", Napi::Function::New(env, MapUpdateBatch, "mapUpdateBatch"));
  exports.Set("mapDeleteBatch", Napi::Function::New(env, MapDeleteBatch, "mapDeleteBatch"));
  exports.Set("mapDeleteKeys", Napi::Function::New(env, MapDeleteKeys, "mapDeleteKeys"));
  exports.Set("numPossibleCpus", Napi::Function::New(env, NumPossibleCpus, "numPossibleCpus"));
}

}  // namespace cellium_bpf
