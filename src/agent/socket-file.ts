// Where the node agent listens: a unix socket in a directory only root (the agent's user) can enter. The directory is
// created 0700 and must be ours, not a link and not writable by group or others (src/fs/safe-dir.ts); the socket is
// made 0600. A socket left behind by a killed agent (connecting is refused: nobody listens) is removed; one with a
// live agent behind it, even one too busy to accept (its listen backlog full), is not taken over.
//
// The socket is bound under a private name beside the path, then hard-linked to the path (which fails if anything is
// there) and the private name removed: the path never exists with a wider mode, two agents cannot both take it, and
// the agent knows the inode that is its own. Node removes the name a server was bound to when it closes; that is the
// private name, long gone, so an agent that stops removes the path itself, and only while it is still its own.
import { chmodSync, linkSync, lstatSync, unlinkSync } from 'node:fs';
import { connect, type Server } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { ensureOwnDirTree } from '../fs/safe-dir.ts';
import { errnoOf } from '../fs/unsafe-file.ts';

export const SOCKET_MODE = 0o600;

/** The socket file an agent bound: removed on close only while the path still names it. */
export interface BoundSocket {
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
}

/** Prepares `path` for listen(): a safe directory, no stale socket. Throws an Error that names the path and why. */
export async function prepareSocketPath(path: string): Promise<void> {
  if (!path.startsWith('/')) throw new Error(`agent socket ${JSON.stringify(path)} must be an absolute path`);
  const dir = dirname(path);
  ensureOwnDirTree(dir, dir);
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw err;
  }
  if (!isSocket) throw new Error(`agent socket ${JSON.stringify(path)} exists and is not a socket: remove it`);
  const probe = await probeSocket(path);
  if (probe.kind === 'served')
    throw new Error(`agent socket ${JSON.stringify(path)} is served by another agent (${probe.how})`);
  if (probe.kind === 'unknown')
    throw new Error(`agent socket ${JSON.stringify(path)}: cannot tell whether an agent serves it (${probe.code})`);
  if (probe.kind === 'stale') removeIfPresent(path); // its agent is gone
}

/**
 * Listens on `path` (prepared by prepareSocketPath) with mode 0600. Fails, with nothing left behind, when another
 * agent took the path meanwhile.
 */
export async function listenAt(server: Server, path: string): Promise<BoundSocket> {
  const privateName = join(
    dirname(path),
    `.${basename(path)}.bind-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(privateName, () => {
      server.off('error', reject);
      resolve();
    });
  });
  try {
    chmodSync(privateName, SOCKET_MODE);
    try {
      linkSync(privateName, path);
    } catch (err) {
      if (errnoOf(err) === 'EEXIST')
        throw new Error(`agent socket ${JSON.stringify(path)} is served by another agent`, { cause: err });
      throw err;
    }
  } catch (err) {
    await new Promise<void>((resolve) => server.close(() => resolve())); // removes the private name
    throw err;
  }
  removeIfPresent(privateName);
  const st = lstatSync(path);
  return { path, dev: st.dev, ino: st.ino };
}

/**
 * Removes the socket file if the path still names the one bound. Call it while the server still listens: then no other
 * agent can judge the path stale and replace it between the check and the unlink.
 */
export function removeOwnSocket(bound: BoundSocket): void {
  let st;
  try {
    st = lstatSync(bound.path);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw err;
  }
  if (st.dev === bound.dev && st.ino === bound.ino) removeIfPresent(bound.path);
}

type Probe =
  | { readonly kind: 'served'; readonly how: string }
  | { readonly kind: 'stale' }
  | { readonly kind: 'gone' }
  | { readonly kind: 'unknown'; readonly code: string };

/**
 * Whether an agent serves the socket. Only a refused connection (ECONNREFUSED: nobody listens) proves it stale; a full
 * listen backlog (EAGAIN) is an agent too busy to accept, and alive.
 */
function probeSocket(path: string): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve({ kind: 'served', how: 'it accepts connections' });
    });
    socket.once('error', (err) => {
      const code = errnoOf(err) ?? err.message;
      if (code === 'ECONNREFUSED') resolve({ kind: 'stale' });
      else if (code === 'ENOENT') resolve({ kind: 'gone' });
      else if (code === 'EAGAIN') resolve({ kind: 'served', how: 'busy: its listen backlog is full' });
      else resolve({ kind: 'unknown', code });
    });
  });
}

function removeIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
}
