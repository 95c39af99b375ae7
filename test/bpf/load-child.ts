// Child process for lxc.test.ts: loads bpf_lxc for an endpoint (config and options as JSON in
// argv[2] and argv[3]), prints the result as JSON and exits — like an agent that stops after a load.
import { loadEndpointProgram } from '../../src/bpf/index.js';

const result = loadEndpointProgram(JSON.parse(process.argv[2]!), JSON.parse(process.argv[3]!));
console.log(JSON.stringify(result));
