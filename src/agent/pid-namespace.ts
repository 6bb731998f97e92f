// The agent runs a call only in the pid namespace of the process that forwarded it. Pool locks are judged by their
// holder's pid (src/fs/lock-owner.ts): an agent in another pid namespace than the host's plugin processes (a pod
// without hostPID) would see their locks as "cannot judge" and take a stalled holder's lock by age, and its own locks
// would be judged by age in turn. Such a call is refused before anything runs, and the plugin runs it itself.
import { ownPidNamespace } from '../fs/proc.ts';
import type { AgentRequest } from './frame.ts';

export class PidNamespaceGate {
  readonly #own = ownPidNamespace();
  readonly #reported = new Set<string>();
  readonly #log: (msg: string) => void;

  constructor(log: (msg: string) => void) {
    this.#log = log;
  }

  /** Why the agent must not run this request, or undefined when it may. Logged once per foreign namespace. */
  refusal(request: AgentRequest): string | undefined {
    const theirs = request.pidns;
    // A client that could not tell (an older plugin, no /proc) is served as before.
    if (theirs === undefined || theirs === this.#own) return undefined;
    const own = this.#own ?? 'an unknown pid namespace';
    if (!this.#reported.has(theirs)) {
      this.#reported.add(theirs);
      this.#log(
        `refusing calls from pid namespace ${theirs}: this agent runs in ${own} and could not judge their lock ` +
          "holders by pid; the plugin runs them itself (run the agent in the host's pid namespace: hostPID: true)",
      );
    }
    return `the agent runs in pid namespace ${own}, this process in ${theirs}`;
  }
}
