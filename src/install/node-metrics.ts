// The node's CNI call metrics (prom-client; loaded only by the long-running installer, never by the plugin), fed by
// the stats folder. Network names are chosen by whoever writes a NetworkAttachmentDefinition: the number of distinct
// network label values is capped (later networks are counted as "_other"), and the record format admits only CNI
// network names, so a value never needs escaping.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AgentCallResult } from '../agent/server.ts';
import type { WarmStats } from '../store/kubernetes/open.ts';
import type { CallRecord } from '../cni/call-record.ts';

export const OTHER_NETWORK = '_other';
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class NodeMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'verb' | 'code' | 'network'>;
  readonly #duration: Histogram<'verb' | 'network'>;
  readonly #skipped: Counter;
  readonly #rotations: Counter<'file'>;
  readonly #agentUp: Gauge;
  readonly #agentEnabled: Gauge;
  readonly #agentCalls: Counter<'result'>;
  readonly #networks = new Set<string>();
  readonly #maxNetworks: number;
  /** The node agent's warm-set figures, read at each scrape (undefined: no agent, or warm sets off). */
  #warm: () => WarmStats | undefined = () => undefined;

  constructor(options: { maxNetworks: number }) {
    this.#maxNetworks = options.maxNetworks;
    const registers = [this.registry];
    this.#requests = new Counter({
      name: 'hereabouts_cni_requests_total',
      help: 'CNI calls on this node by verb, outcome (code "ok" or the CNI error code) and network',
      labelNames: ['verb', 'code', 'network'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'hereabouts_cni_request_duration_seconds',
      help: 'Duration of CNI calls on this node, from the plugin reading its request to its answer',
      labelNames: ['verb', 'network'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#skipped = new Counter({
      name: 'hereabouts_cni_stats_skipped_lines_total',
      help: 'Lines of the call-stats file that were not a whole record (torn by a killed plugin)',
      registers,
    });
    this.#rotations = new Counter({
      name: 'hereabouts_node_file_rotations_total',
      help: 'Size-based rotations of the call-stats file and the plugin log',
      labelNames: ['file'],
      registers,
    });
    this.#agentUp = new Gauge({
      name: 'hereabouts_node_agent_up',
      help: 'Whether this pod serves the node agent socket (0: the plugin runs each call itself, slower but working)',
      registers,
    });
    this.#agentEnabled = new Gauge({
      name: 'hereabouts_node_agent_enabled',
      help: 'Whether this pod is set to serve the node agent (0: --agent-socket "", the plugin runs every call itself)',
      registers,
    });
    this.#agentCalls = new Counter({
      name: 'hereabouts_node_agent_calls_total',
      help: 'Requests to the node agent: answered, deadline (answered with code 11 after the deadline), dropped (the client had gone), refused (not run: the client is in another pid namespace)',
      labelNames: ['result'],
      registers,
    });
    for (const result of ['answered', 'deadline', 'dropped', 'refused'] as const) this.#agentCalls.inc({ result }, 0);
    this.#warmMetrics(registers);
    collectDefaultMetrics({ register: this.registry });
  }

  /** Where the warm-set figures come from (the agent, once it runs). */
  warmFrom(source: () => WarmStats | undefined): void {
    this.#warm = source;
  }

  #warmMetrics(registers: Registry[]): void {
    const read = (pick: (stats: WarmStats) => number): number => {
      const stats = this.#warm();
      return stats === undefined ? 0 : pick(stats);
    };
    const gauge = (name: string, help: string, pick: (stats: WarmStats) => number): Gauge =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read(pick));
        },
      });
    // The agent counts since it started; a counter here follows it (a restarted agent starts a new series).
    const counter = (name: string, help: string, pick: (stats: WarmStats) => number): Counter => {
      let seen = 0;
      return new Counter({
        name,
        help,
        registers,
        collect() {
          const now = read(pick);
          if (now >= seen) this.inc(now - seen);
          seen = now;
        },
      });
    };
    gauge(
      'hereabouts_node_warm_addresses',
      'Warm addresses the node agent holds (claimed, not handed out)',
      (s) => s.warm,
    );
    gauge(
      'hereabouts_node_warm_pending_writes',
      'Hand-outs and releases answered from warm sets whose pool write has not landed yet',
      (s) => s.pending,
    );
    counter('hereabouts_node_warm_handed_out_total', 'ADDs answered from a warm set', (s) => s.handedOut);
    counter('hereabouts_node_warm_released_total', 'Addresses a DEL gave back to a warm set', (s) => s.released);
    counter('hereabouts_node_warm_group_writes_total', 'Grouped pool writes of the node agent', (s) => s.groupWrites);
    counter(
      'hereabouts_node_warm_group_entries_total',
      'Hand-outs and releases the grouped writes settled (over group_writes_total: the batch size)',
      (s) => s.groupedEntries,
    );
    counter(
      'hereabouts_node_warm_group_write_seconds_total',
      'Time spent in grouped pool writes',
      (s) => s.groupWriteMs / 1000,
    );
    counter(
      'hereabouts_node_warm_group_write_failures_total',
      'Grouped pool writes that failed (tried again)',
      (s) => s.groupWriteFailures,
    );
    counter(
      'hereabouts_node_warm_journal_writes_total',
      'Journal appends (one fdatasync each, for every call answered in a turn of the event loop)',
      (s) => s.journalWrites,
    );
    counter(
      'hereabouts_node_warm_journal_seconds_total',
      'Time spent in journal appends and their fdatasync',
      (s) => s.journalMs / 1000,
    );
    gauge(
      'hereabouts_node_warm_journal_off',
      "1 while the agent's warm sets are off because their journal is not open (corrupt or unreadable, or its lock held by another agent of the node)",
      (s) => s.journalOff,
    );
    counter(
      'hereabouts_node_warm_lost_total',
      'Hand-outs whose warm record something else had freed before their rename (never expected)',
      (s) => s.lost,
    );
    counter(
      'hereabouts_node_agent_synchronous_calls_total',
      'Pool updates the agent ran on the synchronous path (not a plain claim from, or release to, a warm set)',
      (s) => s.synchronous,
    );
  }

  record(r: CallRecord): void {
    const network = this.#network(r.network);
    this.#requests.inc({ verb: r.verb, code: r.outcome, network });
    this.#duration.observe({ verb: r.verb, network }, r.micros / 1e6);
  }

  skipped(lines: number): void {
    if (lines > 0) this.#skipped.inc(lines);
  }

  rotated(file: 'stats' | 'log'): void {
    this.#rotations.inc({ file });
  }

  agentUp(up: boolean): void {
    this.#agentUp.set(up ? 1 : 0);
  }

  agentEnabled(enabled: boolean): void {
    this.#agentEnabled.set(enabled ? 1 : 0);
  }

  agentCall(result: AgentCallResult): void {
    this.#agentCalls.inc({ result });
  }

  #network(name: string): string {
    if (this.#networks.has(name)) return name;
    if (this.#networks.size >= this.#maxNetworks) return OTHER_NETWORK;
    this.#networks.add(name);
    return name;
  }
}
