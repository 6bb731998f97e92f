// Keep-alive connections that outlive one CNI call. A plugin process makes one agent per call and destroys it at
// close (the process exits right after); the node agent serves many calls, and keeping one agent per TLS identity
// lets the next call reuse the open, already-verified connection: no handshake. Credentials are not part of the
// identity (the Authorization header is per request, read from the token file on every call), so a rotated token
// takes effect at once; a rotated CA or client certificate is another identity, hence another agent.
//
// Whoever hosts the calls owns the pool and hands it down to where endpoints are made (kubeconfig.ts,
// endpoint-cache.ts) and closed (api.ts): the node agent one keeping pool for its life, everyone else a pool that
// keeps nothing. Nothing here is process-wide.
import { createHash } from 'node:crypto';
import type { Agent } from 'node:http';

/**
 * An idle kept connection is closed after this long: well before an API server closes it on its side (a request
 * racing that close would fail), and a node with no pod starts holds nothing open.
 */
export const IDLE_SOCKET_MS = 30_000;

/** Identities kept at once; a rotation leaves the old one behind, evicted (and its sockets closed) when over. */
const MAX_KEPT = 8;

/** What decides whom a connection trusts and how it authenticates (request options of node:https). */
export interface TlsIdentity {
  readonly ca?: unknown;
  readonly cert?: unknown;
  readonly key?: unknown;
  readonly pfx?: unknown;
  readonly passphrase?: unknown;
  readonly rejectUnauthorized?: unknown;
  readonly servername?: unknown;
}

export class ConnectionPool {
  /** The kept agents by identity, most recently used last; undefined: this pool keeps none. */
  readonly #kept: Map<string, Agent> | undefined;
  readonly #shared = new WeakSet<Agent>();

  /** `keep`: agents are kept across calls (the node agent's pool); else each call's agent is its own. */
  constructor(options: { readonly keep: boolean }) {
    this.#kept = options.keep ? new Map() : undefined;
  }

  /** The agent for `server` and this TLS identity: a kept one when keeping, else `make()`'s. */
  agentFor(server: string, tls: TlsIdentity, make: () => Agent): Agent {
    const kept = this.#kept;
    if (kept === undefined) return make();
    const hash = createHash('sha256').update(server);
    for (const part of [tls.ca, tls.cert, tls.key, tls.pfx, tls.passphrase, tls.rejectUnauthorized, tls.servername]) {
      hash.update('\0');
      if (part !== undefined)
        hash.update(typeof part === 'string' || Buffer.isBuffer(part) ? part : JSON.stringify(part));
    }
    const key = hash.digest('hex');
    const found = kept.get(key);
    if (found !== undefined) {
      kept.delete(key); // most recently used last
      kept.set(key, found);
      return found;
    }
    const agent = make();
    this.#shared.add(agent);
    kept.set(key, agent);
    for (const [oldKey, old] of kept) {
      if (kept.size <= MAX_KEPT) break;
      kept.delete(oldKey);
      this.#shared.delete(old);
      old.destroy();
    }
    return agent;
  }

  /** Ends a call's use of `agent`: destroys it unless this pool keeps it for the next call. */
  release(agent: Agent): void {
    if (!this.#shared.has(agent)) agent.destroy();
  }

  /** How many agents are kept (tests). */
  keptAgents(): number {
    return this.#kept?.size ?? 0;
  }
}
