{
  "targets": [
    {
      "target_name": "cellium_bpf",
      "sources": ["src/addon.cc", "src/util.cc", "src/maps.cc", "src/object.cc", "src/links.cc", "src/cgroup.cc", "src/bpffs.cc", "src/ringbuf.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "_GNU_SOURCE"],
      "libraries": ["-lbpf"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]
    }
  ]
}
