// One step inside another: `other` runs right before the main step's request that the trigger names (across all
// the main step's processes), and the main step waits for it, so the interleaving is exact and replays. Should
// `other` find Whereabouts' Lease held (it then waits for the main step to let go of it: the main step holds it, or
// would in a cluster that serialises with Whereabouts), the main step goes on meanwhile; else waiting would be a
// deadlock the cluster cannot have. Steps that would wait for one of the main step's file locks (the same node's
// pool) are not generated as `other`.
import type { ApiRequest, ApiResponse } from '../../src/kube/api.ts';
import type { RequestHooks } from './faults.ts';
import type { Trigger } from './steps.ts';
import { leaseHeld } from './whereabouts-lease.ts';

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function matches(trigger: Trigger, req: ApiRequest): boolean {
  const path = req.path.split('?')[0] ?? '';
  switch (trigger.on) {
    case 'pool-write':
      return req.method !== 'GET' && req.method !== 'DELETE' && /\/ippools(\/|$)/.test(path);
    case 'reservation-write':
      return WRITES.has(req.method) && /\/overlappingrangeipreservations(\/|$)/.test(path);
    case 'request':
      return true;
  }
}

const isLeaseRead = (req: ApiRequest): boolean =>
  req.method === 'GET' && /\/coordination\.k8s\.io\/v1\/namespaces\/[^/]+\/leases\/[^/?]+/.test(req.path);

interface Interjection {
  readonly trigger: Trigger;
  count: number;
  fired: boolean;
  before(req: ApiRequest): Promise<void>;
}

export class Interleaving {
  #active: Interjection | undefined;
  /** While `other` runs: called when one of its processes finds the Lease held. */
  #unblock: (() => void) | undefined;

  /** The hooks of a process that starts now. */
  hooks(): RequestHooks | undefined {
    const active = this.#active;
    const unblock = this.#unblock;
    if (active === undefined && unblock === undefined) return undefined;
    return {
      ...(active === undefined ? {} : { before: (req: ApiRequest) => active.before(req) }),
      ...(unblock === undefined
        ? {}
        : {
            observe: (req: ApiRequest, res: ApiResponse) => {
              if (isLeaseRead(req) && leaseHeld(res)) unblock();
            },
          }),
    };
  }

  async run(main: () => Promise<string>, trigger: Trigger, other: () => Promise<string>): Promise<string> {
    let inside: Promise<string> | undefined;
    const interjection: Interjection = {
      trigger,
      count: 0,
      fired: false,
      before: async (req) => {
        if (interjection.fired || !matches(trigger, req) || interjection.count++ !== trigger.nth) return;
        interjection.fired = true;
        this.#active = undefined;
        let unblock: () => void = () => undefined;
        const blocked = new Promise<void>((resolve) => (unblock = resolve));
        this.#unblock = unblock;
        inside = other();
        const settled = inside.then(
          () => undefined,
          () => undefined,
        );
        await Promise.race([settled, blocked]);
        void settled.then(() => {
          if (this.#unblock === unblock) this.#unblock = undefined;
        });
      },
    };
    this.#active = interjection;
    let outcome: string;
    try {
      outcome = await main();
    } finally {
      this.#active = undefined;
    }
    if (inside === undefined) return `${outcome} || afterwards: ${await other()}`;
    return `${outcome} || inside it: ${await inside}`;
  }
}
