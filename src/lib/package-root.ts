/**
 * Where Cellium's own files are: the package root, i.e. the nearest directory above this module
 * whose package.json is Cellium's (the repository from src/ or dist/src/, or an installed package).
 * The one place the native addons, the BPF objects and the API spec are found from.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

function isCellium(dir: string): boolean {
  const pkg = join(dir, 'package.json');
  if (!existsSync(pkg)) return false;
  try {
    return (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown }).name === 'cellium';
  } catch {
    return false;
  }
}

/** The package root, or undefined when this module is not inside Cellium's package. */
export function packageRoot(): string | undefined {
  if (root !== undefined) return root;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (isCellium(dir)) return (root = dir);
    if (dirname(dir) === dir) return undefined;
  }
}
