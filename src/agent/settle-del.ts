// A DEL that the plugin runs itself while no node agent serves (the agent was killed during the ADD, or is being
// replaced) settles first what the agent's journal holds for that container and interface: a hand-out the agent made
// durable but never answered, whose rename a restarted agent would otherwise write after this DEL succeeded, leaving
// the pod's address and reservation behind. The plugin takes the journal's lock and replays it as an agent would; the
// container's own hand-outs are released through the journal before the DEL runs on the pool (warm-sets.ts), and
// the journal goes back with nothing pending for that container. A live agent that holds the lock without
// serving (it is starting or stopping) makes the DEL answer code 11: the runtime calls it again.
import { CniCode } from '../cni/errors.ts';
import { bestEffortVersion } from '../cni/version.ts';
import type { JournalHandOut as HandOut } from '../store/kubernetes/open.ts';
import type { StoreHost } from '../store/open.ts';
import { readJournalPointer } from './journal-pointer.ts';
import { WARM_POLICY } from './warm-setting.ts';

export type DelHost =
  | { readonly kind: 'plain' }
  | { readonly kind: 'settling'; readonly host: StoreHost; close(): Promise<void> }
  | { readonly kind: 'busy'; readonly answer: (stdin: Buffer) => string };

/** Claims nothing and keeps nothing warm: the journal's writes only, then every warm address given back. */
export const SETTLE_ONLY = { minimum: 0, maximum: 0, maxShareOfFree: 1, windowMs: 1, idleAfterMs: 1 };

export async function delHost(socketPath: string, env: NodeJS.ProcessEnv): Promise<DelHost> {
  const dir = readJournalPointer(socketPath);
  const containerId = env['CNI_CONTAINERID'];
  const ifname = env['CNI_IFNAME'];
  if (dir === undefined || containerId === undefined || ifname === undefined) return { kind: 'plain' };
  const log = (msg: string): void => void process.stderr.write(`hereabouts: node agent journal ${dir}: ${msg}\n`);
  const { longLivedHost, readJournalPending } = await import('../store/kubernetes/open.ts');
  let pending;
  try {
    pending = readJournalPending(dir);
  } catch (err) {
    // No agent replays a damaged journal either: nothing in it is written after this DEL.
    log(`not read (${err instanceof Error ? err.message : String(err)}); the DEL goes on without it`);
    return { kind: 'plain' };
  }
  const mine = handOutsTo(pending ?? [], containerId, ifname);
  if (mine.length === 0) return { kind: 'plain' };
  log(`${mine.length} hand-out(s) of this container's ${ifname} not written to their pools yet; settling them first`);
  const host = (await longLivedHost({ dir, bounds: SETTLE_ONLY, policy: WARM_POLICY, log, exclusive: true }))();
  const close = async (): Promise<void> => {
    await host.warm?.close();
    host.pods?.close();
  };
  if (host.warm?.journaled !== true) {
    await close();
    return {
      kind: 'busy',
      answer: (stdin) =>
        answer(stdin, 'the node agent holds hand-outs of this container and is not serving (starting or stopping)'),
    };
  }
  return { kind: 'settling', host, close };
}

/** The pending hand-outs of a journal to one container's interface: what its DEL must settle first. */
export const handOutsTo = (pending: readonly HandOut[], containerId: string, ifname: string): HandOut[] =>
  pending.filter(
    (e) => e.op === 'handed-out' && e.attachment.containerId === containerId && e.attachment.ifname === ifname,
  );

function answer(stdin: Buffer, msg: string): string {
  let request: unknown;
  try {
    request = JSON.parse(stdin.toString('utf8'));
  } catch {
    request = undefined;
  }
  const doc = { cniVersion: bestEffortVersion(request), code: CniCode.TryAgainLater, msg, details: 'retry the DEL' };
  return `${JSON.stringify(doc)}\n`;
}
