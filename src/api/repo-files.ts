/** Finds files shipped beside the code (api/openapi.yaml, ../shared/reference/...) from src/ or dist/src/. */
import { packageRoot } from '../lib/package-root.js';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The repository (or package) root (src/lib/package-root.ts); undefined outside it. */
export function repoRoot(): string | undefined {
  return packageRoot();
}

/** A path relative to the repository root (or to this module's grandparent when no root is found). */
export function repoPath(...parts: string[]): string {
  return resolve(repoRoot() ?? join(here, '..', '..'), ...parts);
}

/** The package's version (package.json's `version`), read once; `unknown` when it cannot be read. */
export function packageVersion(): string {
  if (version === undefined) {
    try {
      version = String((JSON.parse(readFileSync(repoPath('package.json'), 'utf8')) as { version?: unknown }).version ?? 'unknown');
    } catch {
      version = 'unknown';
    }
  }
  return version;
}
let version: string | undefined;
