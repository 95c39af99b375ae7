/**
 * Load + attach of bpf_lxc for one endpoint: src/bpf (one libbpf open of the cached ELF, .rodata
 * constants, load, both programs attached with tcx) against `tc filter add … bpf da obj` doing the
 * same in the same run (clsact present; one tc command per hook, each loading the object — tc
 * 6.1 attaches a section's first program, so it loads the same object twice). Target: ours <= 0.5x
 * tc's time. The same with our legacy clsact mode (the kernel mechanism tc uses: a tcx attach or
 * detach waits for an RCU grace period under rtnl, which dominates a first tcx attach on a busy
 * machine), and the atomic reloads (tcx link update, tc replace) of a loaded endpoint. Needs root.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { bpfAvailable, ensureBpffs, objectPath } from '../src/bpf/index.js';
import { loadEndpointProgram, unloadEndpointProgram, type LxcLoadOptions } from '../src/cells/datapath-bpf/lxc/index.js';
import type { EndpointDatapathConfig } from '../src/datapath/types.js';
import { printTable, ratio, stats } from './lib/report.js';

const RUNS = 20;

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8' });
}

async function main(): Promise<void> {
  const avail = bpfAvailable();
  if (!avail.ok || process.getuid?.() !== 0) {
    console.log(`bpf-load: skipped: ${avail.reason ?? 'needs root: creates a network namespace and attaches programs'}`);
    return;
  }
  const id = randomBytes(3).toString('hex');
  const ns = `clbench-${id}`;
  const root = `/sys/fs/bpf/cellium-bench-${id}`;
  ensureBpffs(root);
  ip('netns', 'add', ns);
  try {
    ip('-n', ns, 'link', 'add', 'lxcbench', 'type', 'veth', 'peer', 'name', 'peer0');
    ip('-n', ns, 'link', 'set', 'lxcbench', 'up');
    const link = (JSON.parse(ip('-n', ns, '-j', 'link', 'show', 'lxcbench')) as { ifindex: number; address: string }[])[0]!;
    const cfg: EndpointDatapathConfig = { id: 9, identity: 4242, ipv4: '10.0.0.2', ifName: 'lxcbench', ifIndex: link.ifindex, mac: '02:00:00:00:00:02', hostMac: link.address };
    const opts: LxcLoadOptions = { bpfRoot: root, netns: `/var/run/netns/${ns}` };
    const obj = objectPath('bpf_lxc');

    const time = async (fn: () => unknown): Promise<number> => {
      const t0 = performance.now();
      await fn();
      return performance.now() - t0;
    };
    const ours: number[] = [];
    const reload: number[] = [];
    const legacy: number[] = [];
    const legacyReload: number[] = [];
    const tc: number[] = [];
    const legacyOpts: LxcLoadOptions = { ...opts, mode: 'legacy' };
    await loadEndpointProgram(cfg, opts); // warm-up: ELF cache, libbpf feature probes, maps pinned
    unloadEndpointProgram(cfg.id, cfg.ifIndex, { ...opts, removePolicyMap: false });
    execFileSync('tc', ['-n', ns, 'qdisc', 'add', 'dev', 'lxcbench', 'clsact']);
    for (let i = 0; i < RUNS; i++) {
      // Interleaved so both see the same machine load.
      ours.push(await time(() => loadEndpointProgram({ ...cfg, identity: 4242 + i }, opts)));
      reload.push(await time(() => loadEndpointProgram({ ...cfg, identity: 9000 + i }, opts)));
      unloadEndpointProgram(cfg.id, cfg.ifIndex, { ...opts, removePolicyMap: false });
      legacy.push(await time(() => loadEndpointProgram({ ...cfg, identity: 4242 + i }, legacyOpts)));
      legacyReload.push(await time(() => loadEndpointProgram({ ...cfg, identity: 9000 + i }, legacyOpts)));
      unloadEndpointProgram(cfg.id, cfg.ifIndex, { ...opts, removePolicyMap: false });
      tc.push(await time(() => {
        for (const hook of ['ingress', 'egress']) {
          execFileSync('tc', ['-n', ns, 'filter', 'add', 'dev', 'lxcbench', hook, 'bpf', 'da', 'obj', obj, 'sec', 'tc']);
        }
      }));
      for (const hook of ['ingress', 'egress']) execFileSync('tc', ['-n', ns, 'filter', 'del', 'dev', 'lxcbench', hook]);
    }
    const o = stats(ours);
    const r = stats(reload);
    const l = stats(legacy);
    const lr = stats(legacyReload);
    const b = stats(tc);
    printTable(`bpf_lxc load + attach for one endpoint (${RUNS} runs, ms)`, ['what', 'p50', 'p99', 'mean', 'vs tc (p50)'], [
      ['src/bpf: open + constants + load + 2 tcx attaches', o.p50Ms, o.p99Ms, o.meanMs, ratio(o.p50Ms, b.p50Ms, '<= 0.5x')],
      ['src/bpf: reload (new constants, atomic link update)', r.p50Ms, r.p99Ms, r.meanMs, ratio(r.p50Ms, b.p50Ms)],
      ['src/bpf legacy: open + constants + load + 2 clsact filters', l.p50Ms, l.p99Ms, l.meanMs, ratio(l.p50Ms, b.p50Ms, '<= 0.5x')],
      ['src/bpf legacy: reload (BPF_TC_F_REPLACE)', lr.p50Ms, lr.p99Ms, lr.meanMs, ratio(lr.p50Ms, b.p50Ms)],
      ['baseline: tc filter add … bpf da obj (ingress + egress)', b.p50Ms, b.p99Ms, b.meanMs, '1.00x'],
    ]);
  } finally {
    try {
      ip('netns', 'del', ns);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }
}

await main();
