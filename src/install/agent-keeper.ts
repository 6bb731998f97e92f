// The node agent inside the long-running installer (--agent-socket): started once the socket is free, retried at
// every check until then.
import type { AgentCallResult, RunningAgent } from '../agent/server.ts';
import { warmOptions, type WarmSetting } from '../agent/warm-setting.ts';
import type { WarmStats } from '../store/kubernetes/open.ts';
import { messageOf } from '../errors.ts';
import { RetryLog } from './retry-log.ts';

/**
 * The node agent, unless disabled (--agent-socket ""). Until it runs, the plugin runs each call itself; a start that
 * fails (during a rolling update the old pod's agent still serves the socket) is retried at every check.
 */
export class AgentKeeper {
  readonly #socketPath: string;
  readonly #log: (msg: string) => void;
  readonly #failures: RetryLog;
  readonly #observer: AgentObserver | undefined;
  #agent: RunningAgent | undefined;
  #starting = false;

  readonly #warm: WarmSetting | undefined;

  constructor(socketPath: string, log: (msg: string) => void, observer?: AgentObserver, warm?: WarmSetting) {
    this.#socketPath = socketPath;
    this.#warm = warm;
    this.#log = log;
    this.#failures = new RetryLog(log);
    this.#observer = observer;
    observer?.agentEnabled(socketPath !== '');
    observer?.agentUp(false);
  }

  async ensure(): Promise<void> {
    if (this.#socketPath === '' || this.#agent !== undefined || this.#starting) return;
    this.#starting = true;
    try {
      const { serveNodeAgent } = await import('../agent/main.ts');
      const observe =
        this.#observer === undefined ? {} : { observe: (result: AgentCallResult) => this.#observer?.agentCall(result) };
      const log = (msg: string): void => this.#log(`agent: ${msg}`);
      const warm = this.#warm === undefined ? undefined : warmOptions(this.#warm, log);
      const agent = await serveNodeAgent({
        socketPath: this.#socketPath,
        log,
        ...observe,
        ...(warm === undefined ? {} : { warm }),
      });
      this.#agent = agent;
      this.#observer?.agentUp(true);
      this.#observer?.warmFrom(() => agent.warmStats());
      this.#failures.succeeded();
    } catch (err) {
      this.#failures.failed(`no node agent yet (the plugin runs each call itself; retrying): ${messageOf(err)}`);
    } finally {
      this.#starting = false;
    }
  }

  async close(): Promise<void> {
    await this.#agent?.close();
    this.#observer?.agentUp(false);
  }
}

/** The agent's state and requests, for /metrics. */
export interface AgentObserver {
  agentUp(up: boolean): void;
  /** Whether the agent is wanted at all (--agent-socket not empty). */
  agentEnabled(enabled: boolean): void;
  agentCall(result: AgentCallResult): void;
  warmFrom(source: () => WarmStats | undefined): void;
}
