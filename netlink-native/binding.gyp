{
  "targets": [
    {
      "target_name": "cellium_netlink",
      "sources": ["src/addon.cc", "src/batch.cc", "src/js.cc", "src/nlsock.cc", "src/nsinfo.cc", "src/rtnl.cc", "src/sysctl.cc", "src/watch.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "_GNU_SOURCE"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]
    }
  ]
}
