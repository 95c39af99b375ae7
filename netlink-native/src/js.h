// N-API helpers shared by the handle class (addon.cc) and the step batches (batch.cc): the error
// object a failed operation rejects with, namespace paths, and routes and link changes read from
// JavaScript objects.
#pragma once

#include <napi.h>

#include <string>

#include "nlsock.h"
#include "rtnl.h"

namespace cellium {

// The Error a failed operation rejects with: errno, code (errno name), op, ifname and detail.
Napi::Object errorObject(Napi::Env env, const NlError &e);
// Opens a network namespace path (O_RDONLY); throws NlError naming op.
int openNetns(const std::string &path, const std::string &op);
// o[key] when it is a string, else "".
std::string optStr(const Napi::Object &o, const char *key);
// o[key] when it is a number, else def.
uint32_t optU32(const Napi::Object &o, const char *key, uint32_t def);
// A route from { dst, gateway?, dev?, src?, scope?, onlink?, table?, priority?, mtu? }.
RouteSpec routeFromObject(const Napi::Object &o);
// A link change from { up?, mtu?, mac?, name? } (a namespace move is the caller's business).
LinkChange linkChangeFromObject(const Napi::Object &o);
// Adds applySteps to the addon's exports (batch.cc).
void registerBatch(Napi::Env env, Napi::Object exports);
// Adds nsType to the addon's exports (nsinfo.cc).
void registerNsInfo(Napi::Env env, Napi::Object exports);
// Adds the AddressWatch class to the addon's exports (watch.cc).
void registerWatch(Napi::Env env, Napi::Object exports);

}  // namespace cellium
