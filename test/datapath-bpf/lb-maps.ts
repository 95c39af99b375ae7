// The IPv4 load-balancing maps of bpf/lib/lb.h (Cilium's layouts) written byte by byte, so the
// datapath test checks the C side against the layout itself: backends, slots, reverse NAT and the
// master entry, in the order the agent's reconciler writes them (the datapath never reads a slot
// the master's count covers before it exists).
import { join } from 'node:path';
import { BpfMap } from '../../src/bpf/index.js';

/** A backend: its ID in cellium_lb4_backends, address and port. */
export interface TestBackend {
  readonly id: number;
  readonly ip: string;
  readonly port: number;
}

function ip4(ip: string): Buffer {
  return Buffer.from(ip.split('.').map(Number));
}

function serviceKey(vip: string, port: number, slot: number, proto: number): Buffer {
  const k = Buffer.alloc(12);
  ip4(vip).copy(k, 0);
  k.writeUInt16BE(port, 4);
  k.writeUInt16LE(slot, 6);
  k.writeUInt8(proto, 8);
  return k;
}

function serviceValue(backendId: number, count: number, revNat: number, qcount = 0): Buffer {
  const v = Buffer.alloc(12);
  v.writeUInt32LE(backendId, 0);
  v.writeUInt16LE(count, 4);
  v.writeUInt16LE(revNat, 6);
  v.writeUInt16LE(qcount, 10);
  return v;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
}

/** The pinned IPv4 LB maps under a BPF root (bpf_lxc pins them at its first load). */
export class TestLB4 {
  private readonly services: BpfMap;
  private readonly backends: BpfMap;
  private readonly revNat: BpfMap;

  constructor(root: string) {
    this.services = BpfMap.openPinned(join(root, 'cellium_lb4_services'));
    this.backends = BpfMap.openPinned(join(root, 'cellium_lb4_backends'));
    this.revNat = BpfMap.openPinned(join(root, 'cellium_lb4_reverse_nat'));
  }

  /**
   * Writes service `revNat` at vip:port/proto with `active` taking new flows and `terminating`
   * keeping theirs (slots after the count), and deletes the slots above them.
   */
  setService(vip: string, port: number, proto: number, revNat: number, active: readonly TestBackend[], terminating: readonly TestBackend[] = [], staleSlots = 0): void {
    const all = [...active, ...terminating];
    for (const b of all) {
      const v = Buffer.alloc(12);
      ip4(b.ip).copy(v, 0);
      v.writeUInt16BE(b.port, 4);
      v.writeUInt8(proto, 6);
      v.writeUInt8(terminating.includes(b) ? 1 : 0, 7);
      this.backends.update(u32(b.id), v);
    }
    all.forEach((b, i) => this.services.update(serviceKey(vip, port, i + 1, proto), serviceValue(b.id, 0, revNat)));
    const r = Buffer.alloc(8);
    ip4(vip).copy(r, 0);
    r.writeUInt16BE(port, 4);
    this.revNat.update(u16(revNat), r);
    this.services.update(serviceKey(vip, port, 0, proto), serviceValue(0, active.length, revNat, terminating.length));
    for (let slot = all.length + 1; slot <= staleSlots; slot++) this.services.delete(serviceKey(vip, port, slot, proto));
  }

  /** The VIP's wildcard entry: its ports without a service drop. */
  setWildcard(vip: string): void {
    this.services.update(serviceKey(vip, 0, 0, 0), serviceValue(0, 0, 0));
  }

  /** Removes a backend from the backends map (it is gone). */
  deleteBackend(id: number): void {
    this.backends.delete(u32(id));
  }

  /** Closes the fds. */
  close(): void {
    for (const m of [this.services, this.backends, this.revNat]) m.close();
  }
}
