// applySteps(netnsPath, steps): several rtnetlink requests and sysctl writes run in order as one
// job on a libuv worker thread, on one socket opened for the batch. With a namespace path the whole
// batch (socket, requests, /proc/sys writes) runs on one short-lived thread that joined that
// namespace, so a pod's interface setup costs one thread hop instead of one per operation. The
// first failure stops the batch; the rejection carries the failing step's index as `step`.
#include <unistd.h>

#include <functional>
#include <memory>
#include <vector>

#include "js.h"
#include "sysctl.h"

namespace cellium {
namespace {

using Step = std::function<void(NlSocket &)>;

// One step from its JavaScript description ({ op, ... }); throws a TypeError for a bad one.
Step parseStep(Napi::Env env, const Napi::Value &v, size_t i) {
  const std::string where = "step " + std::to_string(i);
  if (!v.IsObject()) throw Napi::TypeError::New(env, where + " must be an object");
  Napi::Object o = v.As<Napi::Object>();
  const std::string op = optStr(o, "op");
  if (op == "setLink") {
    std::string name = optStr(o, "name");
    Napi::Value change = o.Get("change");
    if (!change.IsObject()) throw Napi::TypeError::New(env, where + ": setLink needs a change object");
    LinkChange c = linkChangeFromObject(change.As<Napi::Object>());
    return [name, c](NlSocket &s) { setLink(s, name, c); };
  }
  if (op == "addAddress") {
    std::string dev = optStr(o, "dev"), cidr = optStr(o, "cidr");
    bool nodad = o.Get("noDad").ToBoolean();
    return [dev, cidr, nodad](NlSocket &s) { addAddress(s, dev, cidr, nodad); };
  }
  if (op == "addRoute") {
    Napi::Value route = o.Get("route");
    if (!route.IsObject()) throw Napi::TypeError::New(env, where + ": addRoute needs a route object");
    RouteSpec r = routeFromObject(route.As<Napi::Object>());
    return [r](NlSocket &s) { addRoute(s, r); };
  }
  if (op == "addNeighbor") {
    std::string dev = optStr(o, "dev"), ip = optStr(o, "ip"), mac = optStr(o, "mac");
    uint16_t state = static_cast<uint16_t>(optU32(o, "state", 0));
    return [dev, ip, mac, state](NlSocket &s) { addNeighbor(s, dev, ip, mac, state); };
  }
  if (op == "writeSysctl") {
    std::string path = optStr(o, "path"), value = optStr(o, "value");
    // the batch's thread is in the target namespace already: no further setns
    return [path, value](NlSocket &) { writeSysctl(-1, path, value); };
  }
  throw Napi::TypeError::New(env, where + ": unknown op \"" + op + "\"");
}

class BatchWorker : public Napi::AsyncWorker {
 public:
  BatchWorker(Napi::Env env, std::string netns, std::vector<Step> steps)
      : Napi::AsyncWorker(env), netns_(std::move(netns)), steps_(std::move(steps)),
        deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    int nsfd = -1;
    try {
      if (!netns_.empty()) nsfd = openNetns(netns_, "applySteps");
      runInNetns(nsfd, "applySteps", [this] {
        NlSocket sock(-1);
        for (failed_step_ = 0; failed_step_ < steps_.size(); failed_step_++) steps_[failed_step_](sock);
      });
    } catch (const NlError &e) {
      failure_ = std::make_unique<NlError>(e);
    } catch (const std::exception &e) {
      failure_ = std::make_unique<NlError>(EIO, "applySteps", "", e.what());
    }
    if (nsfd >= 0) close(nsfd);
    if (failure_) SetError(failure_->what());
  }
  void OnOK() override { deferred_.Resolve(Env().Undefined()); }
  void OnError(const Napi::Error &) override {
    Napi::Object err = errorObject(Env(), *failure_);
    if (failed_step_ < steps_.size()) err.Set("step", static_cast<double>(failed_step_));
    deferred_.Reject(err);
  }

 private:
  std::string netns_;
  std::vector<Step> steps_;
  size_t failed_step_ = SIZE_MAX;
  std::unique_ptr<NlError> failure_;
  Napi::Promise::Deferred deferred_;
};

// applySteps(netnsPath: string ("" = the process's namespace), steps: object[]) -> Promise<void>
Napi::Value ApplySteps(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsArray())
    throw Napi::TypeError::New(env, "applySteps(netnsPath: string, steps: object[])");
  Napi::Array list = info[1].As<Napi::Array>();
  std::vector<Step> steps;
  steps.reserve(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) steps.push_back(parseStep(env, list.Get(i), i));
  auto *w = new BatchWorker(env, info[0].As<Napi::String>().Utf8Value(), std::move(steps));
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

}  // namespace

void registerBatch(Napi::Env env, Napi::Object exports) {
  exports.Set("applySteps", Napi::Function::New(env, ApplySteps, "applySteps"));
}

}  // namespace cellium
