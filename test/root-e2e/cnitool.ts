// cnitool for the e2e tests and benchmarks: built from shared/e2e/build-cnitool.sh (beside the
// repository in CI) into a temporary directory, and run like upstream cnitool.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoPath } from '../../src/api/repo-files.js';
import { needs } from '../needs.js';

/** The build script of cnitool (shared/ beside the repository). */
export const BUILD_CNITOOL = repoPath('..', 'shared', 'e2e', 'build-cnitool.sh');

/** Why cnitool tests skip here, or false when they can run. */
export function skipUnlessCnitool(): string | false {
  const why = needs('root', 'creates network namespaces and runs CNI plugins');
  if (why) return why;
  if (!existsSync(BUILD_CNITOOL)) return `needs ${BUILD_CNITOOL} (shared/e2e beside the repository) to build cnitool`;
  return false;
}

/** Builds cnitool into a fresh temporary directory; returns its path and a cleanup. */
export function buildCnitool(): { path: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'cellium-cnitool-'));
  const path = join(dir, 'cnitool');
  execFileSync('bash', [BUILD_CNITOOL, path], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { path, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** What one cnitool run produced. */
export interface ToolRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `cnitool <verb> <net> <netns>` with NETCONFPATH, CNI_PATH and CNI_ARGS. */
export function cnitool(tool: string, verb: 'add' | 'check' | 'del', net: string, netnsPath: string, env: { confDir: string; binDirs: readonly string[]; args?: string; containerId?: string }): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool, [verb, net, netnsPath], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        NETCONFPATH: env.confDir,
        CNI_PATH: env.binDirs.join(':'),
        ...(env.args ? { CNI_ARGS: env.args } : {}),
        ...(env.containerId ? { CNI_CONTAINERID: env.containerId } : {}),
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
