// Where the node agent listens: a unix socket in a directory only root (the agent's user) can enter. The directory is
// created 0700 and must be ours, not a link and not writable by group or others (src/fs/safe-dir.ts); the socket is
// made 0600. A socket left behind by a killed agent is removed; one with a live agent behind it is not taken over.
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { ensureOwnDirTree } from '../fs/safe-dir.ts';

export const SOCKET_MODE = 0o600;

/** Prepares `path` for listen(): a safe directory, no stale socket. Throws an Error that names the path and why. */
export async function prepareSocketPath(path: string): Promise<void> {
  if (!path.startsWith('/')) throw new Error(`agent socket ${JSON.stringify(path)} must be an absolute path`);
  const dir = dirname(path);
  ensureOwnDirTree(dir, dir);
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!isSocket) throw new Error(`agent socket ${JSON.stringify(path)} exists and is not a socket: remove it`);
  if (await answers(path)) throw new Error(`agent socket ${JSON.stringify(path)} is served by another agent`);
  unlinkSync(path); // stale: its agent is gone
}

/** After listen(): only our user may connect. */
export function restrictSocket(path: string): void {
  chmodSync(path, SOCKET_MODE);
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
