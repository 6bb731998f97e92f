// Whether warm sets may be used in a cluster: the controller's word, on a Lease it renews (DESIGN §11). Whereabouts'
// ip-reconciler frees every allocation whose podref is not a live pod showing the address, warm records included:
// the controller turns warm sets off while any Whereabouts component runs (controller/runtime/warm-gate.ts), and an
// agent uses them only while it reads "allowed" on a Lease whose record changed within its duration by the agent's
// own clock. No controller, no Lease, or a Lease the agent may not read: warm sets stay off (fail safe).
import { monotonicMs } from '../../../clock.ts';
import { messageOf } from '../../../errors.ts';
import type { ApiClient } from '../../../kube/api.ts';
import { getLease, LeaseObservation, type LeaseSpec } from '../../../kube/lease.ts';
import { WARM_ALLOWED, WARM_GATE_ANNOTATION, WARM_GATE_LEASE } from '../objects.ts';

/** How often an agent reads the Lease while it serves calls. */
export const GATE_POLL_MS = 5_000;
const GATE_TIMEOUT_MS = 3_000;

export class WarmGate {
  readonly #observation = new LeaseObservation();
  #spec: LeaseSpec | undefined;
  #verdict = 'not read yet';
  #polledAtMs = Number.NEGATIVE_INFINITY;
  #polling = false;
  readonly #log: (msg: string) => void;
  readonly #onChange: (open: boolean) => void;

  /** `onChange`: told when a read turns warm sets on or off. */
  constructor(log: (msg: string) => void, onChange: (open: boolean) => void = () => undefined) {
    this.#log = log;
    this.#onChange = onChange;
  }

  /** Warm sets may be handed from now (the Lease is read again in the background when due). */
  open(api: ApiClient): boolean {
    this.poll(api);
    return this.#allowed();
  }

  /** Why warm sets are off, or 'allowed'. */
  get verdict(): string {
    if (this.#verdict === WARM_ALLOWED && !this.#allowed()) return 'the controller has not renewed its word lately';
    return this.#verdict;
  }

  /** Reads the Lease in the background when the last read is older than GATE_POLL_MS. */
  poll(api: ApiClient): void {
    if (this.#polling || monotonicMs() - this.#polledAtMs < GATE_POLL_MS) return;
    this.#polling = true;
    void this.read(api).finally(() => (this.#polling = false));
  }

  async read(api: ApiClient): Promise<void> {
    const sentAtMs = monotonicMs();
    this.#polledAtMs = sentAtMs;
    const before = this.#allowed();
    try {
      const lease = await getLease(api, api.namespace, WARM_GATE_LEASE, { timeoutMs: GATE_TIMEOUT_MS });
      if (lease === undefined) {
        this.#spec = undefined;
        this.#verdict = `no Lease ${WARM_GATE_LEASE} (no controller serves this namespace)`;
      } else {
        this.#observation.observe(lease.spec, sentAtMs);
        this.#spec = lease.spec;
        this.#verdict = lease.annotations[WARM_GATE_ANNOTATION] ?? 'the Lease says nothing';
      }
    } catch (err) {
      // Unreachable or forbidden: the last word stands until it lapses.
      if (this.#verdict === 'not read yet') this.#verdict = `cannot read Lease ${WARM_GATE_LEASE}: ${messageOf(err)}`;
    }
    const now = this.#allowed();
    if (before === now) return;
    this.#log(`warm sets ${now ? 'on' : `off: ${this.verdict}`}`);
    this.#onChange(now);
  }

  #allowed(): boolean {
    const spec = this.#spec;
    return this.#verdict === WARM_ALLOWED && spec !== undefined && this.#observation.heldByOther(spec, '');
  }
}
