// The hubble bench's producer (bench/hubble.bench.ts): a tc program that copies the first 64
// bytes of the packet it is test-run with (a crafted struct monitor_event, bpf/lib/common.h) into
// a ring buffer, as the datapath's send_*_event helpers write cellium_events. The bench reads the
// ring with the monitor's reader (src/monitor MonitorEventReader), so both its baseline and the
// Hubble path start from records the kernel wrote, read the way the agent reads them.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20);
  __uint(pinning, LIBBPF_PIN_BY_NAME);
} cellium_events SEC(".maps");

SEC("tc")
int emit(struct __sk_buff *skb) {
  __u8 ev[64];
  if (bpf_skb_load_bytes(skb, 0, ev, sizeof(ev)) < 0) return 1;
  if (bpf_ringbuf_output(&cellium_events, ev, sizeof(ev), 0) < 0) return 2;
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
