/**
 * Embedding example (docs/embedding.md): a tool of its own that runs Cellium's IPAM cell alone in a
 * hive of its own, imported through the package exports, with its own configuration and its own
 * replacement for a dependency (the Jobs the cell uses for expiration). test/embedding runs it.
 */
import { Hive, invoke, replace, silentLogger, JobsToken, type Jobs, type Trigger } from 'cellium/hive';
import { ipamCell, IPAMToken, type IPAM } from 'cellium/cells/ipam';

/** Jobs that record what the cell registered instead of running them (the tool's own replacement). */
export class RecordingJobs implements Jobs {
  readonly registered: string[] = [];
  oneShot(name: string): void {
    this.registered.push(`one-shot ${name}`);
  }
  timer(name: string): Trigger {
    this.registered.push(`timer ${name}`);
    return { trigger: () => undefined };
  }
  observer(name: string): void {
    this.registered.push(`observer ${name}`);
  }
}

/** Allocates `count` addresses for `owner` from `range` with the IPAM cell alone; returns them and the jobs it registered. */
export async function allocateWithCellium(range: string, owner: string, count: number): Promise<{ ips: string[]; jobs: string[] }> {
  const jobs = new RecordingJobs();
  let ipam!: IPAM;
  const hive = new Hive([ipamCell, replace(JobsToken, jobs), invoke('tool', (i: IPAM) => { ipam = i; }, IPAMToken)], { logger: silentLogger() });
  hive.configure({ argv: [`--ipv4-range=${range}`] });
  await hive.start();
  try {
    const ips = Array.from({ length: count }, () => ipam.allocateNext('ipv4', owner).ip);
    return { ips, jobs: jobs.registered };
  } finally {
    await hive.stop();
  }
}
