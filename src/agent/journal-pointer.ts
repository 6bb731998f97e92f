// Where a node agent keeps its warm-set journal, for a plugin process that runs a DEL itself while no agent serves
// (one was killed, or is being replaced): a file beside the socket, in the same root-only directory, naming the
// journal's directory. Written by every agent that serves warm sets; kept when it stops, since its journal may still
// hold hand-outs that the DEL of their container must settle (issue: a DEL that succeeded leaves nothing behind).
import { dirname, isAbsolute, join } from 'node:path';
import { writeFileAtomic } from '../fs/atomic-write.ts';
import { readBoundedIfPresent } from '../fs/read-bounded.ts';

const POINTER = 'journal-dir';

const pointerOf = (socketPath: string): string => join(dirname(socketPath), POINTER);

export function writeJournalPointer(socketPath: string, journalDir: string): void {
  writeFileAtomic(pointerOf(socketPath), `${journalDir}\n`, { mode: 0o600 });
}

/** The journal directory the last agent of this socket named; undefined when none did (or it is not a path). */
export function readJournalPointer(socketPath: string): string | undefined {
  const bytes = readBoundedIfPresent(pointerOf(socketPath), { maxBytes: 4096 });
  const dir = bytes?.toString('utf8').trim();
  return dir !== undefined && isAbsolute(dir) && !/[\0\n]/.test(dir) ? dir : undefined;
}
