/** Host-order integers (this machine's endianness), as C structs and .rodata constants hold them. */
import { endianness } from 'node:os';

const LE = endianness() === 'LE';
const u32 = {
  write: (b: Buffer, v: number, o: number): number => (LE ? b.writeUInt32LE(v >>> 0, o) : b.writeUInt32BE(v >>> 0, o)),
  read: (b: Buffer, o: number): number => (LE ? b.readUInt32LE(o) : b.readUInt32BE(o)),
};
const u16 = {
  write: (b: Buffer, v: number, o: number): number => (LE ? b.writeUInt16LE(v, o) : b.writeUInt16BE(v, o)),
  read: (b: Buffer, o: number): number => (LE ? b.readUInt16LE(o) : b.readUInt16BE(o)),
};

/** Host-order u16/u32 readers and writers. */
export const hostOrder = { u16, u32 };
