// The node's CNI call metrics (prom-client; loaded only by the long-running installer, never by the plugin), fed by
// the stats folder. Network names are chosen by whoever writes a NetworkAttachmentDefinition: the number of distinct
// network label values is capped (later networks are counted as "_other"), and the record format admits only CNI
// network names, so a value never needs escaping.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AgentCallResult } from '../agent/server.ts';
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
  readonly #agentCalls: Counter<'result'>;
  readonly #networks = new Set<string>();
  readonly #maxNetworks: number;

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
    this.#agentCalls = new Counter({
      name: 'hereabouts_node_agent_calls_total',
      help: 'Requests to the node agent: answered, deadline (answered with code 11 after the deadline), dropped (the client had gone), refused (not run: the client is in another pid namespace)',
      labelNames: ['result'],
      registers,
    });
    for (const result of ['answered', 'deadline', 'dropped', 'refused'] as const) this.#agentCalls.inc({ result }, 0);
    collectDefaultMetrics({ register: this.registry });
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
