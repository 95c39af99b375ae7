/**
 * A flow's GetFlowsResponse on the wire, written byte for byte as the generated encoder
 * (ts-proto's Flow.encode and GetFlowsResponse.encode over @bufbuild/protobuf's BinaryWriter) would,
 * but for a stream of flows: the messages the observer shares between flows and never changes
 * (frozen: each side's Endpoint, the event type, the TCP flags, a read's Timestamp) are encoded once
 * and their bytes copied into every flow that carries them; the small per-flow messages (IP, L4,
 * interface, is_reply) and strings are written in place; and each response is copied into a shared
 * slab instead of a buffer of its own (a flow's bytes are a view of it). Any other message (an
 * unfrozen one, a service, an Ethernet header) goes through the generated encoder. The generated
 * code is the reference: test/hubble/wire.test.ts compares both on flows of every kind, and fails
 * when Flow gains a field this file does not write.
 */
import type { BinaryWriter } from '@bufbuild/protobuf/wire';
import { CiliumEventType, Endpoint, Ethernet, IP, NetworkInterface, Service, TCPFlags, type Flow, type Layer4 } from './gen/flow/flow.js';
import { Timestamp } from './gen/google/protobuf/timestamp.js';

/** A generated message's encoder. */
interface Encodes<T> {
  encode(message: T, writer?: BinaryWriter): BinaryWriter;
}

/** Every field of Flow, in the order the generated encoder writes them (the test checks the list is whole). */
export const FLOW_FIELDS: readonly (keyof Flow)[] = [
  'time', 'uuid', 'verdict', 'dropReason', 'ethernet', 'IP', 'l4', 'source', 'destination', 'Type', 'nodeName', 'reply', 'eventType', 'sourceService',
  'destinationService', 'trafficDirection', 'policyMatchType', 'traceObservationPoint', 'traceReason', 'dropReasonDesc', 'isReply', 'interface', 'Summary',
];

const SLAB_SIZE = 256 * 1024;
/** Below these lengths a loop beats a call into Buffer's native writers. */
const SHORT_STRING = 32;
const SHORT_COPY = 128;

function varintSize(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

/** Encodes GetFlowsResponse messages of flows (one instance serves every flow: it reuses its buffers). */
export class FlowResponseEncoder {
  private buf = Buffer.allocUnsafe(4096);
  private pos = 0;
  private readonly forks: number[] = [];
  private slab = Buffer.allocUnsafeSlow(SLAB_SIZE);
  private slabPos = 0;
  /** The encoded bytes of frozen messages, by message. */
  private readonly frozen = new WeakMap<object, Uint8Array>();
  /** The frozen message last written under each tag, and its bytes. */
  private readonly lastByTag = new Map<number, { message: object; bytes: Uint8Array }>();

  /** The GetFlowsResponse `{ flow, node_name: node, time: flow.time }`. */
  encode(flow: Flow, node: string): Buffer {
    this.pos = 0;
    this.forks.length = 0;
    this.tag(10);
    this.fork();
    this.flow(flow);
    this.join();
    if (node !== '') this.str(8002, node);
    if (flow.time !== undefined) this.message(8010, flow.time, Timestamp);
    return this.take();
  }

  private flow(m: Flow): void {
    if (m.time !== undefined) this.message(10, m.time, Timestamp);
    if (m.uuid !== '') this.str(274, m.uuid);
    if (m.verdict !== 0) this.int32(16, m.verdict);
    if (m.dropReason !== 0) this.uint32(24, m.dropReason);
    if (m.ethernet !== undefined) this.message(34, m.ethernet, Ethernet);
    if (m.IP !== undefined) {
      if (Object.isFrozen(m.IP)) this.message(42, m.IP, IP);
      else this.ip(m.IP);
    }
    if (m.l4 !== undefined) this.layer4(m.l4);
    if (m.source !== undefined) this.message(66, m.source, Endpoint);
    if (m.destination !== undefined) this.message(74, m.destination, Endpoint);
    if (m.Type !== 0) this.int32(80, m.Type);
    if (m.nodeName !== '') this.str(90, m.nodeName);
    if (m.reply !== false) this.bool(128, m.reply);
    if (m.eventType !== undefined) this.message(154, m.eventType, CiliumEventType);
    if (m.sourceService !== undefined) this.message(162, m.sourceService, Service);
    if (m.destinationService !== undefined) this.message(170, m.destinationService, Service);
    if (m.trafficDirection !== 0) this.int32(176, m.trafficDirection);
    if (m.policyMatchType !== 0) this.uint32(184, m.policyMatchType);
    if (m.traceObservationPoint !== 0) this.int32(192, m.traceObservationPoint);
    if (m.traceReason !== 0) this.int32(288, m.traceReason);
    if (m.dropReasonDesc !== 0) this.int32(200, m.dropReasonDesc);
    if (m.isReply !== undefined) {
      // google.protobuf.BoolValue
      this.tag(210);
      this.fork();
      if (m.isReply) this.bool(8, true);
      this.join();
    }
    if (m.interface !== undefined) {
      if (Object.isFrozen(m.interface)) this.message(226, m.interface, NetworkInterface);
      else this.networkInterface(m.interface);
    }
    if (m.Summary !== '') this.str(800002, m.Summary);
  }

  private ip(m: IP): void {
    this.tag(42);
    this.fork();
    if (m.source !== '') this.str(10, m.source);
    if (m.sourceXlated !== '') this.str(42, m.sourceXlated);
    if (m.destination !== '') this.str(18, m.destination);
    if (m.ipVersion !== 0) this.int32(24, m.ipVersion);
    if (m.encrypted !== false) this.bool(32, m.encrypted);
    this.join();
  }

  private layer4(m: Layer4): void {
    this.tag(50);
    this.fork();
    if (m.TCP !== undefined) {
      this.tag(10);
      this.fork();
      this.ports(m.TCP.sourcePort, m.TCP.destinationPort);
      if (m.TCP.flags !== undefined) this.message(26, m.TCP.flags, TCPFlags);
      this.join();
    }
    if (m.UDP !== undefined) this.pair(18, m.UDP.sourcePort, m.UDP.destinationPort);
    if (m.ICMPv4 !== undefined) this.pair(26, m.ICMPv4.type, m.ICMPv4.code);
    if (m.ICMPv6 !== undefined) this.pair(34, m.ICMPv6.type, m.ICMPv6.code);
    if (m.SCTP !== undefined) this.pair(42, m.SCTP.sourcePort, m.SCTP.destinationPort);
    this.join();
  }

  /** A message of two uint32 fields (UDP, SCTP ports; ICMP type and code). */
  private pair(tag: number, a: number, b: number): void {
    this.tag(tag);
    this.fork();
    this.ports(a, b);
    this.join();
  }

  private ports(a: number, b: number): void {
    if (a !== 0) this.uint32(8, a);
    if (b !== 0) this.uint32(16, b);
  }

  private networkInterface(m: NetworkInterface): void {
    this.tag(226);
    this.fork();
    if (m.index !== 0) this.uint32(8, m.index);
    if (m.name !== '') this.str(18, m.name);
    this.join();
  }

  /**
   * A sub-message: a frozen one's bytes made once and kept, any other one by the generated encoder.
   * The message and bytes last written under each tag are at hand without the lookup (consecutive
   * flows mostly share them).
   */
  private message<T extends object>(tag: number, m: T, type: Encodes<T>): void {
    let bytes: Uint8Array | undefined;
    const last = this.lastByTag.get(tag);
    if (last?.message === m) {
      bytes = last.bytes;
    } else if (Object.isFrozen(m)) {
      bytes = this.frozen.get(m);
      if (!bytes) this.frozen.set(m, (bytes = type.encode(m).finish()));
      if (last) {
        last.message = m;
        last.bytes = bytes;
      } else {
        this.lastByTag.set(tag, { message: m, bytes });
      }
    } else {
      bytes = type.encode(m).finish();
    }
    this.tag(tag);
    const n = bytes.length;
    this.varint(n);
    this.ensure(n);
    const b = this.buf;
    if (n < SHORT_COPY) {
      const at = this.pos;
      for (let i = 0; i < n; i++) b[at + i] = bytes[i]!;
    } else {
      b.set(bytes, this.pos);
    }
    this.pos += n;
  }

  private tag(tag: number): void {
    this.varint(tag);
  }

  private uint32(tag: number, v: number): void {
    this.varint(tag);
    this.varint(v >>> 0);
  }

  private int32(tag: number, v: number): void {
    this.varint(tag);
    if (v >= 0) {
      this.varint(v);
      return;
    }
    // a negative int32 is its 64-bit two's complement: ten bytes
    this.ensure(10);
    let lo = v >>> 0;
    for (let i = 0; i < 4; i++) {
      this.buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    this.buf[this.pos++] = (lo & 0x0f) | 0x70 | 0x80;
    for (let i = 0; i < 4; i++) this.buf[this.pos++] = 0xff;
    this.buf[this.pos++] = 0x01;
  }

  private bool(tag: number, v: boolean): void {
    this.varint(tag);
    this.ensure(1);
    this.buf[this.pos++] = v ? 1 : 0;
  }

  /**
   * A string field, its length first: a short one copied char by char while it is ASCII, a long one
   * by Buffer's UTF-8 writer after a length prefix sized for ASCII (UTF-8 is as long as the string
   * only when it is all ASCII; else the bytes move to fit the longer prefix).
   */
  private str(tag: number, s: string): void {
    this.varint(tag);
    const n = s.length;
    this.ensure(n * 3 + 5);
    const b = this.buf;
    const guess = varintSize(n);
    const at = this.pos + guess;
    if (n < SHORT_STRING) {
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        b[at + i] = c;
      }
      if (i === n) {
        this.varint(n);
        this.pos += n;
        return;
      }
    }
    const len = b.write(s, at, 'utf8');
    const size = varintSize(len);
    if (size !== guess) b.copyWithin(this.pos + size, at, at + len);
    this.varint(len);
    this.pos += len;
  }

  private varint(v: number): void {
    this.ensure(5);
    const b = this.buf;
    while (v > 0x7f) {
      b[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[this.pos++] = v;
  }

  /** Starts a length-delimited message: one byte kept for its length (moved along when it needs more). */
  private fork(): void {
    this.ensure(1);
    this.forks.push(this.pos++);
  }

  private join(): void {
    const at = this.forks.pop()!;
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    const size = varintSize(len);
    this.ensure(size - 1);
    this.buf.copyWithin(at + size, at + 1, this.pos);
    this.pos += size - 1;
    const end = this.pos;
    this.pos = at;
    this.varint(len);
    this.pos = end;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** The message written, copied into the slab (a new slab when it is full). */
  private take(): Buffer {
    const n = this.pos;
    if (this.slabPos + n > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(Math.max(SLAB_SIZE, n));
      this.slabPos = 0;
    }
    const out = this.slab.subarray(this.slabPos, this.slabPos + n);
    this.buf.copy(this.slab, this.slabPos, 0, n);
    // eight-byte aligned, as Buffer's pool keeps its slices
    this.slabPos += (n + 7) & ~7;
    return out;
  }
}
