// One CNI call as a line of the node's call-stats file, written by the plugin (src/cni/call-stats.ts) and folded by
// the DaemonSet process (src/install/stats-fold.ts). Shared here so that both sides agree on the format.
//
//   #1 <verb> <outcome> <microseconds> <network>\n
//
// "#" starts every record and appears nowhere inside one: a fragment left by a killed writer (no newline) and the next
// writer's record end up on one line, and the reader takes only what follows the last "#". Every field is from a
// closed alphabet (verbs, "ok" or a CNI code, digits, a CNI network name), so a line can neither carry a newline nor
// anything a Prometheus label value would have to escape.

export const STATS_FILE = 'calls';
/**
 * The plugin's stats directory on the host; it records only when the directory exists (the DaemonSet makes it).
 * Outside /var/lib/cni on purpose: a network configuration may point data_dir and cache_dir anywhere below the
 * allowed data directories (by default /var/lib/cni), and so could plant a directory named "calls" in it or make
 * it exist on a node where nothing folds it.
 */
export const DEFAULT_STATS_DIR = '/var/lib/hereabouts/stats';
/** The plugin's environment may move it (the runtime's environment is the operator's, never a tenant's). */
export const STATS_DIR_ENV = 'HEREABOUTS_STATS_DIR';

const VERBS = ['ADD', 'DEL', 'CHECK', 'GC', 'STATUS', 'VERSION'] as const;
export type StatsVerb = (typeof VERBS)[number] | 'unknown';

export interface CallRecord {
  readonly verb: StatsVerb;
  /** "ok", or the CNI error code. */
  readonly outcome: string;
  readonly micros: number;
  /** The CNI network name, or "-" when the request had no valid one. */
  readonly network: string;
}

// CNI network names (spec): alphanumerics first, then alphanumerics, '_', '.', '-'; bounded so a line stays short.
const NETWORK = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,252}$/;
const OUTCOME = /^(ok|\d{1,4})$/;

export function verbOf(value: string | undefined): StatsVerb {
  return (VERBS as readonly string[]).includes(value ?? '') ? (value as StatsVerb) : 'unknown';
}

export function networkOf(value: unknown): string {
  return typeof value === 'string' && NETWORK.test(value) ? value : '-';
}

export function formatRecord(r: CallRecord): string {
  const micros = Number.isFinite(r.micros) && r.micros >= 0 ? Math.round(r.micros) : 0;
  const outcome = OUTCOME.test(r.outcome) ? r.outcome : '999';
  return `#1 ${r.verb} ${outcome} ${micros} ${networkOf(r.network)}\n`;
}

const RECORD =
  /^1 (ADD|DEL|CHECK|GC|STATUS|VERSION|unknown) (ok|\d{1,4}) (\d{1,15}) (-|[a-zA-Z0-9][a-zA-Z0-9_.-]{0,252})$/;

/** The record in one line (without its newline), or undefined for a torn or foreign line. */
export function parseRecord(line: string): CallRecord | undefined {
  const at = line.lastIndexOf('#');
  if (at < 0) return undefined;
  const m = RECORD.exec(line.slice(at + 1));
  if (m === null) return undefined;
  const [, verb, outcome, micros, network] = m;
  if (outcome === undefined || network === undefined) return undefined;
  return { verb: verb as StatsVerb, outcome, micros: Number(micros), network };
}
