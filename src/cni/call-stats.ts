// Records one CNI call in the node's call-stats file: one O_APPEND write of one short line per call, so concurrent
// plugin processes never interleave and never wait for each other, and a crash loses at most its own line. Only
// when the stats directory exists (the DaemonSet creates it and folds the file into /metrics); recording never fails
// a call. The directory is the operator's: a fixed path, or the runtime's environment, never the network config.
import { join } from 'node:path';
import { appendLine } from '../fs/append-line.ts';
import { errnoOf } from '../fs/unsafe-file.ts';
import { DEFAULT_STATS_DIR, formatRecord, STATS_DIR_ENV, STATS_FILE, verbOf, type CallRecord } from './call-record.ts';

export interface CallOutcome {
  readonly verb: string | undefined;
  /** "ok" or the CNI error code. */
  readonly outcome: 'ok' | number;
  readonly network: unknown;
  readonly durationMs: number;
}

/** Appends the call; returns why it could not (for a debug log line), or undefined. */
export function recordCall(
  call: CallOutcome,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  const dir = env[STATS_DIR_ENV] ?? DEFAULT_STATS_DIR;
  if (dir === '' || !dir.startsWith('/')) return undefined;
  const record: CallRecord = {
    verb: verbOf(call.verb),
    outcome: call.outcome === 'ok' ? 'ok' : String(call.outcome),
    micros: call.durationMs * 1000,
    network: typeof call.network === 'string' ? call.network : '-',
  };
  try {
    appendLine(join(dir, STATS_FILE), formatRecord(record));
    return undefined;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined; // no DaemonSet folds here
    return `call stats not recorded in ${dir}: ${err instanceof Error ? err.message : String(err)}`;
  }
}
