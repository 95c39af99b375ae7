// The hubble bench's cheapest client (bench/hubble.bench.ts): follows GetFlows on the unix socket
// given as the first argument with @grpc/grpc-js, keeps each message's bytes undecoded, and prints
// how many it has received every 100 ms (or every second argument's ms), so the bench measures the
// server, not a decoder.
/* global setInterval */
import grpc from '@grpc/grpc-js';

const socket = process.argv[2];
const client = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure());
// an empty GetFlowsRequest with follow (field 3) set
const request = Buffer.from([0x18, 0x01]);
const call = client.makeServerStreamRequest('/observer.Observer/GetFlows', (b) => b, (b) => b, request);
let n = 0;
call.on('data', () => n++);
call.on('error', () => process.exit(0));
setInterval(() => process.stdout.write(`${n}\n`), Number(process.argv[3] ?? 100));
