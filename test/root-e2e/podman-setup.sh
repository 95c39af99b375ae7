#!/bin/bash
# Prepares podman (CNI network backend) to run containers offline for the e2e tests, as
# shared/e2e/podman-setup.sh does, and imports a tiny image `localhost/bb:latest` built from Debian's
# busybox-static. Idempotent; run as root. It creates no CNI network (the tests install their own).
#   usage: test/root-e2e/podman-setup.sh [CNI_PLUGIN_DIR ...]   (default /opt/cni/bin and /usr/lib/cni)
set -euo pipefail
need=""
for p in podman containernetworking-plugins busybox-static iputils-ping runc; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
  echo "podman-setup: installing$need" >&2
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
fi
dirs=("$@"); [ ${#dirs[@]} -gt 0 ] || dirs=(/opt/cni/bin /usr/lib/cni)
list=$(printf '"%s", ' "${dirs[@]}"); list="[${list%, }]"
mkdir -p /etc/containers /etc/cni/net.d /opt/cni/bin
# crun refuses this machine kind's hybrid cgroups -> runc; no systemd -> cgroupfs; no
# CAP_SYS_RESOURCE -> podman's default ulimits cannot be raised, so pin them to the current ones.
NOFILE=$(ulimit -Hn); NPROC=$(ulimit -Hu)
if [ "$NPROC" = unlimited ] || [ "$NPROC" -gt 32768 ]; then NPROC=32768; fi
cat > /etc/containers/containers.conf <<CONF
[containers]
default_ulimits = ["nofile=$NOFILE:$NOFILE", "nproc=$NPROC:$NPROC"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"

[network]
network_backend = "cni"
cni_plugin_dirs = $list
network_config_dir = "/etc/cni/net.d"
CONF
if ! podman image exists localhost/bb:latest; then
  R=$(mktemp -d)
  mkdir -p "$R"/{bin,etc,proc,sys,dev,tmp,root}
  cp /bin/busybox "$R/bin/busybox"
  for a in sh ping ip sleep wget nc httpd cat ls echo hostname true; do ln -sf busybox "$R/bin/$a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' > "$R/etc/passwd"; echo 'root:x:0:' > "$R/etc/group"
  tar -C "$R" -cf "$R.tar" .
  podman import --change 'CMD ["/bin/sh"]' --change 'ENV PATH=/bin' "$R.tar" localhost/bb:latest >/dev/null
  rm -rf "$R" "$R.tar"
fi
echo "podman-setup: ready (image localhost/bb:latest; plugin dirs $list)"
